"""The robot world: Maxim's head, camera and attention in a simulated room, without ROS.

A scenario's world is data: where the head starts, and objects (a name, a colour, the pan
and tilt that centre them, an angular radius) that may be shown, hidden or moved by its
turns. The world runs the robot's own parts on it, in plain Python:

- the head is maxim_perception's HeadController with the URDF's joint limits and velocity
  (maxim_bringup/urdf/maxim_head.urdf), stepped at the control rate; it follows the Mind's
  goals (the BodyPort) and hurts (JOINT_LIMIT pain) when a goal asks past a limit. The joints
  follow their command exactly (a perfect servo). Attention's reflex is not wired: where the
  head points is the Mind's doing, which is what the scenarios judge;
- the camera renders each frame through the CameraModel (pinhole, the camera node's 60
  degree field of view): every object in view is a filled disc of its colour on a grey room,
  so objects come into and out of view as the head turns;
- attention is maxim_perception's AttentionCore on those pixels (colour detection, tracker,
  novelty, focus); its PerceptSummary becomes a Percept message exactly as the attention node
  publishes it, and the agent node's conversion turns that into the Mind's Percept. A person's
  line is the panel's Percept message, through the same conversion.

Everything is on an injected clock, so scripted scenarios replay on simulated time. Body
criteria (where the head pointed, how far it moved, what hurt) are measured from the head's
samples, never from what the Mind said.
"""

from dataclasses import dataclass
import json
import math
import os
from typing import Any, Callable, Mapping
import uuid
import xml.etree.ElementTree as ET

import cv2
import numpy as np

from maxim_core import conversions as core_conv
from maxim_core.agent.loop import Percept
from maxim_core.mind.ports import HeadGoalCommand
from maxim_perception import conversions as perception_conv
from maxim_perception.attention.attention import AttentionConfig, AttentionCore
from maxim_perception.camera_model import CameraModel
from maxim_perception.head.control import (angle_between_deg, HeadConfig, HeadController,
                                           HeadGoalSpec, HeadMode, TargetView)

from maxim_bringup.conversions import speech_to_percept

# maxim_bringup's URDF in the source checkout (this package's folder is its sibling), else
# the installed share folder (_urdf_path).
URDF_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), 'maxim_bringup', 'urdf', 'maxim_head.urdf')
# BGR colours the attention's colour detector knows by these names.
COLOURS = {'red': (0, 0, 220), 'orange': (0, 140, 255), 'yellow': (0, 220, 220),
           'green': (0, 200, 0), 'blue': (220, 60, 0)}
BACKGROUND = (128, 128, 128)
CONTROL_HZ = 50.0
FRAME_HZ = 10.0
STILL_RAD_S = 0.05          # the head is still below this joint speed
MAX_CATCH_UP_S = 900.0      # a longer gap (a stalled run) is not replayed frame by frame


class WorldError(ValueError):
    """A robot world description (or event) that cannot be simulated."""


def urdf_head_config(path: str = '') -> HeadConfig:
    """The head controller's limits from the URDF's pan and tilt joints."""
    path = path or _urdf_path()
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise WorldError(f'cannot read the head URDF {path}: {exc}') from exc
    limits = {}
    for joint in root.iter('joint'):
        limit = joint.find('limit')
        if joint.get('name') in ('head_pan_joint', 'head_tilt_joint') and limit is not None:
            limits[joint.get('name')] = (float(limit.get('lower')), float(limit.get('upper')),
                                         float(limit.get('velocity')))
    if set(limits) != {'head_pan_joint', 'head_tilt_joint'}:
        raise WorldError(f'{path} lacks the limits of head_pan_joint and head_tilt_joint')
    pan, tilt = limits['head_pan_joint'], limits['head_tilt_joint']
    return HeadConfig(pan_min=pan[0], pan_max=pan[1], tilt_min=tilt[0], tilt_max=tilt[1],
                      max_velocity=min(pan[2], tilt[2]))


def _urdf_path() -> str:
    if os.path.isfile(URDF_PATH):
        return URDF_PATH
    from ament_index_python.packages import get_package_share_directory
    return os.path.join(get_package_share_directory('maxim_bringup'), 'urdf',
                        'maxim_head.urdf')


@dataclass
class WorldObject:
    name: str
    colour: str
    pan: float                  # the head pan that centres it (rad, left positive)
    tilt: float                 # the head tilt that centres it (rad, down positive)
    radius: float = 0.08        # angular radius (rad)
    shown: bool = True

    @classmethod
    def parse(cls, raw: Any) -> 'WorldObject':
        if not isinstance(raw, Mapping) or not isinstance(raw.get('name'), str):
            raise WorldError(f'an object needs a name: {raw!r}')
        unknown = set(raw) - {'name', 'colour', 'pan', 'tilt', 'radius', 'shown'}
        if unknown:
            raise WorldError(f'object {raw["name"]}: unknown keys {sorted(unknown)}')
        colour = raw.get('colour')
        if colour not in COLOURS:
            raise WorldError(f'object {raw["name"]}: colour must be one of {sorted(COLOURS)}')
        try:
            obj = cls(raw['name'], colour, float(raw.get('pan', 0.0)),
                      float(raw.get('tilt', 0.0)), float(raw.get('radius', 0.08)),
                      bool(raw.get('shown', True)))
        except (TypeError, ValueError) as exc:
            raise WorldError(f'object {raw["name"]}: {exc}') from exc
        if not all(math.isfinite(v) for v in (obj.pan, obj.tilt, obj.radius)) or \
                not 0.01 <= obj.radius <= 0.5:
            raise WorldError(f'object {obj.name}: finite angles and a radius in [0.01, 0.5]')
        return obj


class RobotWorld:
    """A RobotWorldPort (maxim_eval.scenario.robot_bridge) over the robot's perception parts."""

    def __init__(self, setup: Mapping | None = None, *,
                 clock: Callable[[], float], urdf_path: str = ''):
        setup = dict(setup or {})
        unknown = set(setup) - {'head', 'objects', 'camera'}
        if unknown:
            raise WorldError(f'unknown robot world keys {sorted(unknown)}')
        self.clock = clock
        self.head_config = urdf_head_config(urdf_path)
        self.pan_limits = (self.head_config.pan_min, self.head_config.pan_max)
        self.tilt_limits = (self.head_config.tilt_min, self.head_config.tilt_max)
        head = dict(setup.get('head') or {})
        pan0, tilt0 = float(head.get('pan', 0.0)), float(head.get('tilt', 0.0))
        c = self.head_config
        if not (c.pan_min <= pan0 <= c.pan_max and c.tilt_min <= tilt0 <= c.tilt_max):
            raise WorldError(f'the head starts outside its joint limits: {pan0}, {tilt0}')
        camera = dict(setup.get('camera') or {})
        self.camera = CameraModel(int(camera.get('width', 320)), int(camera.get('height', 240)),
                                  math.radians(float(camera.get('hfov_deg', 60.0))))
        self.objects: dict[str, WorldObject] = {}
        for raw in setup.get('objects') or ():
            obj = WorldObject.parse(raw)
            if obj.name in self.objects:
                raise WorldError(f'two objects are named {obj.name}')
            self.objects[obj.name] = obj
        self.attention = AttentionCore(self.camera,
                                       AttentionConfig(faces=False, motion=False,
                                                       detect_width=self.camera.width))
        self.t = clock()
        self.head = HeadController(self.head_config, initial=(pan0, tilt0))
        self.head.set_measured(pan0, tilt0, self.t)
        self.pan, self.tilt = pan0, tilt0
        self.pan_vel = self.tilt_vel = 0.0
        self.samples: list[tuple[float, float, float]] = [(self.t, pan0, tilt0)]
        self.pains: list[dict] = []
        self._new_pain: list[dict] = []
        self._next_frame = self.t
        self._last = None                  # the last AttentionResult
        self._told: tuple = ()             # the labels of the last view percept (none yet)
        self.frames = 0
        self.goals: list[dict] = []
        self._frame()

    # -- the BodyPort ---------------------------------------------------------------------
    def head_position(self) -> tuple[float, float] | None:
        return self.pan, self.tilt

    def send_head_goal(self, goal: HeadGoalCommand) -> None:
        now = self.clock()
        self.advance(now)
        spec = HeadGoalSpec(mode=HeadMode(goal.mode), goal_id=goal.goal_id,
                            requested_by=goal.requested_by, pan=goal.pan, tilt=goal.tilt,
                            track_id=goal.track_id, target_label=goal.target_label,
                            speed=goal.speed, duration_s=goal.duration_s)
        result = self.head.set_goal(spec, self.t)
        self.goals.append({'t': self.t, 'mode': HeadMode(goal.mode).name.lower(),
                           'pan': goal.pan, 'tilt': goal.tilt, 'label': goal.target_label,
                           'accepted': result.accepted, 'reason': result.reason})
        self._drain_pain()

    # -- time -------------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Control ticks and camera frames up to `now` (a gap longer than MAX_CATCH_UP_S is
        skipped to its last stretch)."""
        dt = 1.0 / CONTROL_HZ
        if now - self.t > MAX_CATCH_UP_S:
            self.t = now - MAX_CATCH_UP_S
            self._next_frame = self.t
        while self.t + dt <= now + 1e-9:
            self.t += dt
            cmd = self.head.step(dt, self.t)
            self.pan_vel, self.tilt_vel = cmd.pan_velocity, cmd.tilt_velocity
            self.pan, self.tilt = cmd.pan, cmd.tilt
            self.head.set_measured(self.pan, self.tilt, self.t, self.pan_vel, self.tilt_vel)
            self.samples.append((self.t, self.pan, self.tilt))
            if self.t >= self._next_frame - 1e-9:
                self._frame()
                self._next_frame += 1.0 / FRAME_HZ
            self._drain_pain()

    def _drain_pain(self) -> None:
        for p in self.head.pop_pain():
            pain = {'t': p.stamp, 'type_name': p.type_name, 'intensity': p.intensity,
                    'description': p.message}
            self.pains.append(pain)
            self._new_pain.append(pain)

    # -- the camera and attention -----------------------------------------------------------
    def render(self) -> np.ndarray:
        """The camera's frame with the head where it is now."""
        cam = self.camera
        frame = np.full((cam.height, cam.width, 3), BACKGROUND, np.uint8)
        fx = cam.intrinsics.fx
        for obj in self.objects.values():
            if not obj.shown:
                continue
            dpan, dtilt = obj.pan - self.pan, obj.tilt - self.tilt
            if math.cos(dpan) * math.cos(dtilt) <= 0.2:
                continue            # behind or far beside the camera
            u, v = cam.head_angles_to_pixel(obj.pan, obj.tilt, self.pan, self.tilt)
            r = max(1, int(round(fx * math.tan(obj.radius))))
            if -r <= u <= cam.width + r and -r <= v <= cam.height + r:
                cv2.circle(frame, (int(round(u)), int(round(v))), r, COLOURS[obj.colour], -1)
        return frame

    def _frame(self) -> None:
        result = self.attention.process(self.render(), self.t, self.pan, self.tilt)
        self.frames += 1
        self._last = result
        self.head.update_targets([TargetView(tg.track_id, tg.pan, tg.tilt, tg.label,
                                             tg.salience, tg.novelty)
                                  for tg in result.targets], self.t)

    def view_percept(self) -> Percept | None:
        r = self._last
        if r is None or max(abs(self.pan_vel), abs(self.tilt_vel)) > STILL_RAD_S:
            return None
        labels = r.percept.signature[0]
        if labels == self._told:
            return None
        self._told = labels
        msg = perception_conv.percept_to_msg(r.percept, uuid.uuid4().hex[:12])
        return core_conv.msg_to_percept(msg)

    def speech_percept(self, text: str) -> Percept:
        return core_conv.msg_to_percept(speech_to_percept(text, uuid.uuid4().hex[:12],
                                                          source_name='person'))

    def scene_summary(self, fields: dict) -> dict:
        summary = self.attention.scene_summary(int(fields.get('top_n', 5)),
                                               bool(fields.get('include_attention', True)))
        return {'available': bool(summary['available']), 'error_code': 0,
                'narrative': summary['narrative'], 'result_json': json.dumps(summary)}

    def pop_pain(self) -> list[dict]:
        out, self._new_pain = self._new_pain, []
        return out

    # -- scenario-facing --------------------------------------------------------------------
    def event(self, event: Mapping) -> str:
        said = []
        for key, value in event.items():
            names = [value] if isinstance(value, str) else value
            if key in ('show', 'hide'):
                if not isinstance(names, list):
                    raise WorldError(f'{key} takes an object name or a list of names')
                for name in names:
                    self._object(name).shown = key == 'show'
                    said.append(f'{name} {"shown" if key == "show" else "hidden"}')
            elif key == 'place':
                if not isinstance(value, Mapping):
                    raise WorldError('place takes {object: {pan, tilt}}')
                for name, where in value.items():
                    obj = self._object(name)
                    obj.pan = float(where.get('pan', obj.pan))
                    obj.tilt = float(where.get('tilt', obj.tilt))
                    said.append(f'{name} placed at pan {obj.pan:.2f}, tilt {obj.tilt:.2f}')
            else:
                raise WorldError(f'unknown world event {key!r}')
        return '; '.join(said)

    def _object(self, name: Any) -> WorldObject:
        if name not in self.objects:
            raise WorldError(f'no object {name!r} in this world (objects: '
                             f'{", ".join(self.objects) or "none"})')
        return self.objects[name]

    def check(self, spec: Mapping, since: float, until: float | None = None
              ) -> tuple[bool, str]:
        """One body criterion. Kinds (one per spec):
        - pointed_at: OBJECT, min_fraction (0.5), within_rad (0.1): the head pointed within
          within_rad of the object for at least that fraction of the time since;
        - looked_at: OBJECT, within_rad (0.1): it pointed at the object at some moment since;
        - moved: min_rad: the head travelled at least this far since;
        - pain: TYPE (or 'any'), max (0): at most this many pains of that type since.
        `until` (world clock) ends the span: a criterion on one stretch of the run."""
        end = float('inf') if until is None else until
        samples = [s for s in self.samples if since - 1e-9 <= s[0] < end]
        if 'pointed_at' in spec or 'looked_at' in spec:
            key = 'pointed_at' if 'pointed_at' in spec else 'looked_at'
            obj = self._object(spec[key])
            within = math.degrees(float(spec.get('within_rad', 0.1)))
            on = [angle_between_deg(p, t, obj.pan, obj.tilt) <= within for _, p, t in samples]
            frac = sum(on) / len(on) if on else 0.0
            if key == 'looked_at':
                return any(on), f'looked at {obj.name} ({frac:.0%} of the time since)'
            need = float(spec.get('min_fraction', 0.5))
            return frac >= need, (f'pointed at {obj.name} {frac:.0%} of the time since '
                                  f'(need {need:.0%})')
        if 'moved' in spec:
            need = float(spec['moved'].get('min_rad', 0.1)) if isinstance(
                spec['moved'], Mapping) else float(spec['moved'])
            path = sum(math.hypot(b[1] - a[1], b[2] - a[2])
                       for a, b in zip(samples, samples[1:]))
            return path >= need, f'head moved {path:.2f} rad (need {need:.2f})'
        if 'pain' in spec:
            kind = str(spec['pain'])
            hurt = [p for p in self.pains if since - 1e-9 <= p['t'] < end
                    and kind in ('any', p['type_name'])]
            most = int(spec.get('max', 0))
            return len(hurt) <= most, f'{len(hurt)} {kind} pain(s) (at most {most})'
        raise WorldError(f'unknown body criterion {dict(spec)!r}')


def robot_aut(scenario, backend, config, grammar_for, *, name: str, memories, clock, sleep,
              memory_port=None):
    """The scenario runner's factory for robot-world AUTs (maxim_eval.scenario.scenario's
    `worlds['robot']`): a world from the scenario's setup, and the RobotBridge on it."""
    from maxim_eval.scenario.robot_bridge import RobotBridge
    world = RobotWorld(scenario.setup, clock=clock)
    return RobotBridge(backend, world, goal=scenario.goal, config=config, memories=memories,
                       allowed_tools=scenario.allowed_tools, grammar_for=grammar_for,
                       name=name, memory_port=memory_port, clock=clock, sleep=sleep)


WORLDS = {'robot': robot_aut}
