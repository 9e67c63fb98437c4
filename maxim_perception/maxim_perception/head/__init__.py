"""Head control: the pan/tilt controller core (control), the drivers that move a real or
simulated head, the head controller's parameters (params), the supervision of its driver
(supervision) and its control schedule (scheduler).

Nothing here imports rclpy or message packages; the nodes translate.
"""

from maxim_perception.head.control import (CommandResult, HeadConfig, HeadController, HeadGoalSpec,
                                           HeadMode, HeadStatus, JointCommand, PainEvent,
                                           PainType, TargetView)
from maxim_perception.head.motion import MotionModel

__all__ = ['CommandResult', 'HeadConfig', 'HeadController', 'HeadGoalSpec', 'HeadMode',
           'HeadStatus', 'JointCommand', 'MotionModel', 'PainEvent', 'PainType', 'TargetView']
