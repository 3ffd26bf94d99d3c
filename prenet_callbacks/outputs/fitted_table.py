"""A table that fits the width it is rendered at, without cutting what it shows.

rich shrinks a table that is too wide by wrapping and then cropping cells (``A100-…``, ``$0.…``). A
`FittedTable` decides its layout itself, at render time, from the width it is given (the console's,
inside the panel): every column at its full width when that fits; else headers and wrappable cells
break at spaces (never inside a word); else columns leave the table in their declared order (the
least useful first: method, price, FLOP/B); last, a ``keep_tail`` column (layer names) shortens its
cells from the left ("…encoder.layers.3.mlp"). Numbers, bands and hardware names are never cut.

Title and notes are lines of their own above and below the table, so that they wrap at the full
width rather than at the (possibly narrow) table's. A column empty in every row is left out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

_GAP = 3            # between two columns: a space, the rule, a space (no outer edge or padding)
_SHORTEST_TAIL = 8  # a keep_tail cell is never shortened below this many cells ("…" included)
_EMPTY = ("", "—")


@dataclass(frozen=True)
class Column:
    """One column of a `FittedTable`.

    Args:
        header: the column's title (breaks at spaces when the table is tight).
        justify: "left", "right" or "center".
        drop: the order in which columns leave a table that does not fit (1 goes first); None: never.
        wrap: cells may break at spaces onto further lines (never inside a word).
        keep_tail: the last resort of a table that does not fit: cells lose their head ("…layers.3.mlp").
        min_width: a floor for the column (e.g. the longest label that must stay on one line).
    """

    header: str
    justify: str = "left"
    drop: int | None = None
    wrap: bool = False
    keep_tail: bool = False
    min_width: int = 0


def _plain(cell: str) -> str:
    return Text.from_markup(cell).plain


def _longest_line(text: str) -> int:
    return max((Text(line).cell_len for line in text.split("\n")), default=0)


def _longest_word(text: str) -> int:
    return max((Text(word).cell_len for word in re.split(r"\s+", text) if word), default=0)


def shorten_head(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its head replaced by "…" (a layer's name keeps its own part)."""
    if Text(text).cell_len <= width:
        return text
    tail = text[len(text) - max(1, width - 1):]
    dot = tail.find(".")
    # start at a part of the dotted path ("…layers.3.mlp", not "…ers.3.mlp") unless that leaves too little
    if 0 <= dot < len(tail) // 2:
        tail = tail[dot + 1:]
    return "…" + tail


class FittedTable:
    """A table laid out for the width it is rendered at. See the module docstring.

    Args:
        columns: the columns, in display order.
        rows: one list of cells per row (rich markup allowed; "\\n" starts a new line in a cell).
        title: a line above the table.
        caption: lines below the table (notes), wrapped at the full width.
    """

    def __init__(self, columns: Sequence[Column], rows: Iterable[Sequence[str]], *, title: str = "",
                 caption: str = "") -> None:
        rows = [list(row) for row in rows]
        # a column with nothing in any row ("—" throughout: no speed-up without a measured row) is left out
        kept = [i for i in range(len(columns)) if not rows or any(_plain(row[i]) not in _EMPTY for row in rows)]
        self.columns = [columns[i] for i in kept]
        self.rows = [[row[i] for i in kept] for row in rows]
        self.title = title
        self.caption = caption

    # -- layout -----------------------------------------------------------------------------------
    def _cells(self, index: int) -> list[str]:
        return [_plain(row[index]) for row in self.rows]

    def _natural(self, index: int) -> int:
        column = self.columns[index]
        return max([_longest_line(column.header), column.min_width, *map(_longest_line, self._cells(index))])

    def _minimum(self, index: int) -> int:
        column = self.columns[index]
        cells = self._cells(index)
        widest = max(map(_longest_word if column.wrap else _longest_line, cells), default=0)
        if column.keep_tail:
            widest = min(widest, _SHORTEST_TAIL)
        return max(_longest_word(column.header), column.min_width, widest)

    def layout(self, width: int) -> tuple[list[int], list[int]]:
        """The columns kept (indices) and their widths, for a table at most ``width`` cells wide."""
        kept = list(range(len(self.columns)))
        droppable = sorted((c.drop, i) for i, c in enumerate(self.columns) if c.drop is not None)

        def total(widths: list[int]) -> int:
            return sum(widths) + _GAP * (len(widths) - 1)

        while True:
            natural = [self._natural(i) for i in kept]
            if total(natural) <= width:
                return kept, natural
            # keep-tail columns only shorten once nothing else can go
            floor = [self._minimum(i) if not self.columns[i].keep_tail else self._natural(i) for i in kept]
            if total(floor) <= width or not droppable:
                break
            kept.remove(droppable.pop(0)[1])
        minimum = [self._minimum(i) for i in kept]
        widths = list(minimum)
        spare = width - total(widths)
        for position, natural_width in enumerate(natural):  # the room left goes to the leftmost columns first
            grow = max(0, min(natural_width - widths[position], spare))
            widths[position] += grow
            spare -= grow
        return kept, widths

    def table_for(self, width: int) -> Table:
        """The rich `Table` of this layout at ``width`` (what is rendered)."""
        kept, widths = self.layout(width)
        table = Table(show_edge=False, pad_edge=False)
        for index, column_width in zip(kept, widths):
            column = self.columns[index]
            # a header breaks at its spaces; a cell cannot break: its column is at least as wide (`layout`)
            table.add_column(column.header, justify=column.justify, width=column_width, overflow="fold")
        for row in self.rows:
            cells = []
            for index, column_width in zip(kept, widths):
                cell = row[index]
                if self.columns[index].keep_tail:
                    cell = shorten_head(cell, column_width)
                cells.append(cell)
            table.add_row(*cells)
        return table

    # -- rich protocol ----------------------------------------------------------------------------
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title:
            yield Text(self.title, style="italic")
        yield self.table_for(options.max_width)
        if self.caption:
            yield Text(self.caption)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        _, widths = self.layout(options.max_width)
        table_width = sum(widths) + _GAP * (len(widths) - 1)
        text_width = max([_longest_line(self.title), *(_longest_line(line) for line in self.caption.split("\n"))])
        return Measurement(min(table_width, options.max_width),
                           min(max(table_width, text_width), options.max_width))
