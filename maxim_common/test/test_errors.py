"""maxim_common.errors holds ToolResult's error codes, value for value."""

from maxim_common import errors
from maxim_interfaces.msg import ToolResult


def test_the_error_codes_are_the_messages():
    codes = {n: v for n, v in vars(errors).items() if n.startswith('ERROR_')}
    assert len(codes) == 9
    assert codes == {n: getattr(ToolResult, n) for n in codes}
