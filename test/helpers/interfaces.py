"""Every interface type maxim_interfaces defines, found from its installed share/ files."""

import importlib
import os

from ament_index_python.packages import get_package_share_directory


def _names(kind: str, ext: str) -> list[str]:
    share = get_package_share_directory('maxim_interfaces')
    folder = os.path.join(share, kind)
    return sorted(f[:-len(ext)] for f in os.listdir(folder) if f.endswith(ext))


def message_types() -> list:
    mod = importlib.import_module('maxim_interfaces.msg')
    return [getattr(mod, n) for n in _names('msg', '.msg')]


def service_types() -> list:
    mod = importlib.import_module('maxim_interfaces.srv')
    return [getattr(mod, n) for n in _names('srv', '.srv')]


def action_types() -> list:
    mod = importlib.import_module('maxim_interfaces.action')
    return [getattr(mod, n) for n in _names('action', '.action')]
