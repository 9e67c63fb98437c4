"""What the thinking panel shows and how its keys move it, with no UI library in sight.

Seed 000's panel: a continuous stream of thoughts across the session. Left arrow enters the
panel (the stream stops following so it can be read), up/down scroll through history, right
arrow leaves and follows the latest thought again, option(alt)+up/down give the panel more
or less room. The Textual app only renders this model and forwards keys to it.
"""

from dataclasses import dataclass, field


@dataclass
class ThoughtStreamModel:
    """A scrollable stream of text blocks (each a thought or an event, rich markup)."""

    height: int = 14                 # rows the panel takes
    min_height: int = 4
    max_height: int = 60
    max_lines: int = 5000            # history kept; oldest lines go first
    follow: bool = True              # show the newest lines as they arrive
    focused: bool = False            # the panel has the keys (entered with left arrow)
    offset: int = 0                  # lines scrolled up from the newest
    lines: list = field(default_factory=list)

    def add(self, block: str) -> None:
        new = block.split('\n')
        self.lines.extend(new)
        if not self.follow:
            self.offset += len(new)  # keep the reader's place while new thoughts arrive
        overflow = len(self.lines) - self.max_lines
        if overflow > 0:
            del self.lines[:overflow]
        self._clamp()

    def key(self, name: str) -> bool:
        """Apply a key; True when the model changed. Names as Textual gives them."""
        if name == 'left':
            changed = not self.focused
            self.focused, self.follow = True, False
            return changed
        if name == 'right':
            changed = self.focused or not self.follow or self.offset != 0
            self.focused, self.follow, self.offset = False, True, 0
            return changed
        if name in ('up', 'down') and self.focused:
            before = self.offset
            self.offset += 1 if name == 'up' else -1
            self._clamp()
            return self.offset != before
        if name in ('alt+up', 'alt+down'):
            before = self.height
            self.height += 2 if name == 'alt+up' else -2
            self.height = max(self.min_height, min(self.max_height, self.height))
            self._clamp()
            return self.height != before
        return False

    def _clamp(self) -> None:
        self.offset = max(0, min(self.offset, max(0, len(self.lines) - self.height)))

    def visible(self) -> list[str]:
        """The lines in view, oldest first."""
        end = len(self.lines) - (0 if self.follow else self.offset)
        return self.lines[max(0, end - self.height):end]

    def status(self) -> str:
        if self.follow:
            return 'following the latest thought · ← to scroll'
        return (f'scrolled {self.offset} lines up · ↑/↓ scroll · → follow latest · '
                f'alt+↑/↓ resize')
