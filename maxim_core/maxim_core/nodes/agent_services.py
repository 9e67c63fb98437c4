"""The agent node's services as calls on the Mind: agent/energy_status and agent/submit_task.
`mind` is None before configure and after cleanup; the answer then says so."""

from maxim_core import conversions as conv
from maxim_core.idle.tasks import TaskError, TaskNotFound


def energy_status(mind, request, response):
    """EnergyStatus: the Mind's token accounting over `window_seconds`."""
    if mind is None:
        response.error_code = response.ERROR_UNAVAILABLE
        response.error_msg = 'the agent is not configured'
        return response
    try:
        report = mind.energy_status(request.window_seconds)
    except ValueError as exc:
        response.error_code, response.error_msg = response.ERROR_INVALID_REQUEST, str(exc)
        return response
    for key, value in vars(report).items():
        if hasattr(response, key):     # each as its field's type (0 is no float64)
            setattr(response, key, type(getattr(response, key))(value))
    response.available = True
    return response


def submit_task(mind, request, response):
    """SubmitTask: add, pause, resume or cancel a task in the Mind's task store."""
    ops = {request.OP_ADD: 'add', request.OP_PAUSE: 'pause', request.OP_RESUME: 'resume',
           request.OP_CANCEL: 'cancel'}
    try:
        if mind is None:
            raise TaskError('the agent is not configured: no task store is open')
        task = mind.submit_task(ops.get(request.op, str(request.op)), request.task.task_id,
                                lambda: conv.msg_to_new_task(request.task))
    except TaskNotFound as exc:
        response.error_code, response.error_msg = response.ERROR_NOT_FOUND, exc.args[0]
        return response
    except (TaskError, ValueError) as exc:
        response.error_code, response.error_msg = response.ERROR_INVALID_REQUEST, str(exc)
        return response
    response.accepted = True
    conv.task_to_msg(task, response.task)
    return response
