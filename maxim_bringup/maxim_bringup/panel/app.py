"""The thinking panel as a Textual app: the thought stream above, a line to talk below.

The app knows nothing of ROS: it is given `say(text)` and `answer(request_id, text)`
callables, and other threads feed it with `post_block()` and `post_question()`.
"""

from typing import Callable

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from maxim_bringup.panel.model import ThoughtStreamModel


class ThoughtPanel(Static, can_focus=True):
    """The scrollable thought stream; has the keys once entered with the left arrow."""

    BINDINGS = [
        Binding('up', 'stream("up")', 'scroll up', show=False),
        Binding('down', 'stream("down")', 'scroll down', show=False),
        Binding('right', 'leave', 'follow latest', show=False),
        Binding('alt+up', 'stream("alt+up")', 'bigger', show=False),
        Binding('alt+down', 'stream("alt+down")', 'smaller', show=False),
    ]

    def action_stream(self, key: str) -> None:
        self.app.apply_key(key)

    def action_leave(self) -> None:
        self.app.apply_key('right')
        self.app.query_one(TalkInput).focus()


class TalkInput(Input):
    """The line to talk to the robot. Left arrow at the start of the line enters the panel;
    option(alt)+up/down resize the panel from here too."""

    BINDINGS = [
        Binding('alt+up', 'resize("alt+up")', 'bigger', show=False),
        Binding('alt+down', 'resize("alt+down")', 'smaller', show=False),
    ]

    def action_cursor_left(self, select: bool = False) -> None:
        if self.cursor_position == 0:
            self.app.apply_key('left')
            self.app.query_one(ThoughtPanel).focus()
            return
        super().action_cursor_left(select)

    def action_resize(self, key: str) -> None:
        self.app.apply_key(key)


class ThinkingPanelApp(App):
    """Thought stream + talk line (+ the agent's question, when it asks one)."""

    CSS = '''
    ThoughtPanel { border: round $accent; padding: 0 1; }
    ThoughtPanel:focus { border: round $success; }
    #status { color: $text-muted; height: 1; }
    #question { color: $warning; height: auto; }
    '''
    BINDINGS = [Binding('ctrl+c', 'quit', 'quit', priority=True)]

    def __init__(self, say: Callable[[str], None] | None = None,
                 answer: Callable[[str, str], None] | None = None,
                 model: ThoughtStreamModel | None = None, title: str = 'Maxim'):
        super().__init__()
        self.model = model or ThoughtStreamModel()
        self.say = say or (lambda text: None)
        self.answer = answer or (lambda request_id, text: None)
        self.pending_question: tuple[str, str] | None = None
        self.title = title

    def compose(self) -> ComposeResult:
        yield ThoughtPanel(id='panel')
        yield Static(id='status')
        yield Static(id='question')
        yield TalkInput(placeholder='talk to the robot (Enter to send)', id='say')

    def on_mount(self) -> None:
        self.refresh_panel()
        self.query_one(TalkInput).focus()

    # -- fed by other threads -----------------------------------------------------------------
    def post_block(self, markup: str) -> None:
        self.call_from_thread(self.add_block, markup)

    def post_question(self, request_id: str, prompt: str, options: list[str]) -> None:
        self.call_from_thread(self.ask, request_id, prompt, options)

    # -- on the app's thread -----------------------------------------------------------------
    def add_block(self, markup: str) -> None:
        self.model.add(markup)
        self.refresh_panel()

    def ask(self, request_id: str, prompt: str, options: list[str]) -> None:
        self.pending_question = (request_id, prompt)
        choices = f' [{" / ".join(options)}]' if options else ''
        self.query_one('#question', Static).update(Text(f'? {prompt}{choices}'))

    def apply_key(self, key: str) -> None:
        if self.model.key(key):
            self.refresh_panel()

    def refresh_panel(self) -> None:
        panel = self.query_one(ThoughtPanel)
        panel.styles.height = self.model.height + 2  # the border
        panel.update(Text.from_markup('\n'.join(self.model.visible()) or
                                      '[dim]waiting for the first thought…[/]'))
        self.query_one('#status', Static).update(self.model.status())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        event.input.value = ''
        if not text:
            return
        if self.pending_question is not None:
            request_id, _ = self.pending_question
            self.pending_question = None
            self.query_one('#question', Static).update('')
            self.answer(request_id, text)
            self.add_block(f'[bold]you[/] (answer): {text}')
        else:
            self.say(text)
            self.add_block(f'[bold]you[/]: {text}')
