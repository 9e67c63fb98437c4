"""The head's joint limits, read from its URDF: the one place they are written.

The head controller, the agent's body model (the move tool, its verifier, the cerebellum) and
the ros2_control xacro all take them from the URDF they are given (the shipped
maxim_bringup/urdf/maxim_head.urdf, or the calibrated copy `./maxim calibrate` writes); the
nodes read the file and hand the limits to their cores. Plain Python (no rclpy, no messages).
"""

import math
import os
import xml.etree.ElementTree as ET

PAN_JOINT, TILT_JOINT = 'head_pan_joint', 'head_tilt_joint'
SHIPPED = os.path.join('urdf', 'maxim_head.urdf')    # in maxim_bringup's share


class UrdfError(ValueError):
    """A URDF that cannot give the limits asked for (says which file and why)."""


def joint_limits(text: str, where: str = 'the URDF') -> dict[str, tuple[float, float]]:
    """{joint name: (lower, upper)} rad of every joint with a <limit> in a URDF's text."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UrdfError(f'{where} does not parse: {exc}') from exc
    out = {}
    for joint in root.iter('joint'):
        limit = joint.find('limit')
        if limit is None or joint.get('type') == 'continuous':
            continue
        name = joint.get('name', '')
        try:
            lower, upper = float(limit.get('lower', 'nan')), float(limit.get('upper', 'nan'))
        except ValueError as exc:
            raise UrdfError(f'{where}: joint {name} has a limit that is no number: {exc}') \
                from exc
        if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
            raise UrdfError(f'{where}: joint {name} needs finite limits with lower < upper, '
                            f'got {limit.get("lower")}, {limit.get("upper")}')
        out[name] = (lower, upper)
    return out


def head_limits(text: str, where: str = 'the URDF', pan_joint: str = PAN_JOINT,
                tilt_joint: str = TILT_JOINT) -> dict[str, tuple[float, float]]:
    """{'pan': (lower, upper), 'tilt': (lower, upper)} rad: the head's two joints' limits."""
    limits = joint_limits(text, where)
    missing = [j for j in (pan_joint, tilt_joint) if j not in limits]
    if missing:
        raise UrdfError(f'{where} has no <limit> for {", ".join(missing)}')
    return {'pan': limits[pan_joint], 'tilt': limits[tilt_joint]}


def read_head_limits(path: str = '') -> dict[str, tuple[float, float]]:
    """The head's limits from the URDF file at `path` ('': the shipped one)."""
    path = os.path.expanduser(path) if path else shipped_urdf()
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as exc:
        raise UrdfError(f'cannot read the URDF {path}: {exc.strerror or exc}') from exc
    return head_limits(text, path)


def shipped_urdf() -> str:
    """maxim_bringup's urdf/maxim_head.urdf: the installed share, else the source tree
    beside this package (a checkout run without an install)."""
    try:
        from ament_index_python.packages import (get_package_share_directory,
                                                 PackageNotFoundError)
        try:
            path = os.path.join(get_package_share_directory('maxim_bringup'), SHIPPED)
            if os.path.isfile(path):
                return path
        except PackageNotFoundError:
            pass    # not installed: the source tree below
    except ImportError:
        pass        # no ROS environment: the source tree below
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, '..', '..', 'maxim_bringup', SHIPPED)
