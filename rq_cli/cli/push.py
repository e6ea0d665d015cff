"""``rq-cli push``: items from arguments, or streamed from stdin in batches."""

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring_ascii
from typing import Annotated, Any

import typer

from ..core.contract.batches import check_batch
from ..core.contract.util import check_new_id, check_tenant
from ..core.pushing import bulk
from ..core.types import NewItem, PushResult
from ..errors import (
    BadInputError,
    Interrupted,
    NothingToDo,
    RqError,
    ServerError,
    Unconfirmed,
    UsageError,
)
from ..output.progress import Progress
from ..output.render import Column, Output, message
from . import reading, signals
from .common import JsonOpt, QueueArg, State, read_stdin, state

DataArg = Annotated[list[str] | None, typer.Argument(
    help="Items, each a JSON text (any bytes with --raw). '-' (or none, with stdin not a "
         "terminal) reads one item per line from stdin.", show_default=False,
    metavar="DATA")]


def push(
    ctx: typer.Context,
    queue: QueueArg,
    data: DataArg = None,
    item_id: Annotated[str | None, typer.Option(
        "--id", metavar="ID",
        help="The item's id (one DATA argument only). Default: a random id.")] = None,
    id_from_data: Annotated[bool, typer.Option(
        "--id-from-data", help="Use the SHA-256 of the data as the id, so equal items "
                               "collapse into one.")] = False,
    front: Annotated[bool, typer.Option(
        "--front", help="Put the items at the front of the line (leased next).")] = False,
    delay: Annotated[float, typer.Option(
        "--delay", min=0, metavar="SECONDS", help="Make the items due only after this long.")
    ] = 0.0,
    expire: Annotated[float | None, typer.Option(
        "--expire", min=0.001, metavar="SECONDS",
        help="Dead-letter the items (reason expired) if not leased within this long.")] = None,
    with_ids: Annotated[bool, typer.Option(
        "--with-ids", help='stdin lines are objects {"id": ..., "data": ...} (what lease and '
                           'peek print), so an exported queue re-imports.')] = False,
    raw: Annotated[bool, typer.Option(
        "--raw", help="Take data as opaque bytes instead of requiring JSON.")] = False,
    dedup_window: Annotated[float | None, typer.Option(
        "--dedup-window", min=0, metavar="SECONDS", show_default=False,
        help="Remember ids completed from now on for this long and refuse them meanwhile "
             "(reason \"recently completed\"); 0 turns it off. Default: the queue's "
             "dedup_window, else as the queue has it.")] = None,
    summary: Annotated[bool, typer.Option(
        "--summary", help="Print one line of counts (and why items were refused) instead of "
                          "one line per item.")] = False,
    tenant: Annotated[str | None, typer.Option(
        "--tenant", metavar="TENANT",
        help='Put the items in this tenant\'s sub-queue: leases take turns between tenants '
             '(fair queues). With --with-ids a line\'s own "tenant" field wins.')] = None,
    batch: Annotated[str | None, typer.Option(
        "--batch", metavar="NAME",
        help="The items join batch NAME of the queue (made by its first push): rq-cli batch "
             "shows its counts, rq-cli wait waits until it is done.")] = None,
    after: Annotated[str | None, typer.Option(
        "--after", metavar="NAME",
        help="Hold the items until batch NAME of the queue is done, then queue them (a "
             "sharded queue: released by rq-cli wait, this push or clean once every shard's "
             "part is done).")
    ] = None,
    after_ok: Annotated[str | None, typer.Option(
        "--after-ok", metavar="NAME",
        help="As --after, but if any item of NAME died, dead-letter them instead (reason "
             "after_failed).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add items to a queue, from arguments or one per line from stdin.

    Example: rq-cli push emails '{"to": "a@example.com"}'
    """
    if after is not None and after_ok is not None:
        raise UsageError("--after and --after-ok cannot be used together")
    tally = _Tally(queue)  # (what a Ctrl-C or SIGTERM at any moment says was stored)
    # Ctrl-C and SIGTERM are only recorded (from start-up on), and acted on where nothing is
    # in flight: before and after the call, between batches, or where stdin is waited for
    signals.record_stops(tally.last_words)
    try:
        if signals.stopping():  # (in start-up)
            raise KeyboardInterrupt
        _push(ctx, tally, data, item_id, id_from_data, summary, as_json,
                      {"id_from_data": id_from_data, "front": front, "delay": delay,
                       "expire": expire, "tenant": tenant, "batch": batch,
                       "after": after if after_ok is None else after_ok,
                       "after_ok": after_ok is not None},
                      with_ids=with_ids, raw=raw, tenant=tenant, dedup_window=dedup_window)
    except KeyboardInterrupt:  # before the first batch, or after the last: nothing in flight
        raise _stopped(tally) from None
    if signals.stopping():  # (after the last batch was stored: the count is all of them)
        raise _stopped(tally)


def _push(ctx: typer.Context, tally: "_Tally", data: list[str] | None, item_id: str | None,
          id_from_data: bool, summary: bool, as_json: bool, options: dict[str, Any], *,
          with_ids: bool, raw: bool, tenant: str | None, dedup_window: float | None) -> None:
    queue = tally.queue
    st = state(ctx)
    out = st.output(as_json)
    from_stdin = read_stdin(data, st.terminal)
    if item_id is not None and (from_stdin or len(data or []) != 1):
        raise UsageError("--id needs exactly one DATA argument")
    if item_id is not None:
        check_new_id(reading.check_utf8(item_id, "the item id"))
    if item_id is not None and id_from_data:
        raise UsageError("--id and --id-from-data cannot be used together")
    if with_ids and not from_stdin:
        raise UsageError("--with-ids reads stdin: use '-'")
    if not from_stdin and not data:
        raise UsageError("nothing to push: give DATA arguments, or '-' to read stdin")
    if tenant is not None:
        check_tenant(tenant)
    if options["batch"] is not None:
        check_batch(options["batch"])
    wq = st.queue(queue)
    if options["after"] is not None:
        _check_after(wq, queue, options)
    if not hasattr(wq, "stream"):  # a plain queue: not one the server records as sharded
        from ..core.sharding.shardmeta import refuse_if_sharded

        refuse_if_sharded(wq.client, wq.prefix, queue)
    window = dedup_window if dedup_window is not None else wq.options.dedup_window
    if window is not None:  # one call before the items: the queue's window, and a prune
        wq.set_dedup_window(window)
    if not from_stdin:
        items = [NewItem(reading.check_data(reading.arg_bytes(d), raw, f"argument {n}"),
                         item_id) for n, d in enumerate(data or [], 1)]
        tally.use(out, summary)
        if signals.stopping():
            raise KeyboardInterrupt
        try:
            tally.add(wq.push(items, **options))
        except Unconfirmed as exc:
            raise _unconfirmed(exc, tally) from None
        except KeyboardInterrupt:  # (no hold: a program's Ctrl-C raised in the call)
            raise Interrupted(f"interrupted: push: the {plural(len(items), 'item')} "
                              f"given may or may not have been stored (re-running is "
                              f"safe only with ids: --id or --id-from-data)") from None
        if signals.stopping():
            raise KeyboardInterrupt
        tally.finish(table=True)
        return
    stream = reading.stdin_binary()
    read = signals.stoppable(stream)  # (a wait for input ends at a signal)
    place = reading.Place()
    lines: Iterator[Any] = (reading.push_objects(read, raw=raw, place=place) if with_ids
                            else reading.push_lines(read, raw=raw, place=place))
    tally.use(out, summary or not out.json)
    # no progress bar over lines being typed (stdin a terminal): it would draw over them
    typing = st.terminal.stdin_isatty()
    with (contextlib.nullcontext(Progress()) if typing else
          out.progress(f"push {queue}", total=_size(stream), unit="bytes")) as bar:
        try:
            batches = wq.stream(lines, stop=signals.stopping, **options) \
                if hasattr(wq, "stream") else \
                bulk.stream(wq, lines, stop=signals.stopping, **options)
            _stream(st, batches, tally,
                    lambda: bar.set(_tell(stream), f"push {queue}: {tally.items} items"),
                    None if hasattr(wq, "stream") else lambda sent: _not_sent(place, read,
                                                                             sent))
        except RqError:
            if tally.summary:  # the summary of what was stored, then the one error line
                tally.finish(table=False)
            raise
    tally.finish(table=False)


def _check_after(wq: Any, queue: str, options: dict[str, Any]) -> None:
    """``push --after``/``--after-ok NAME``: one of them, not with a delay or a tenant,
    naming a batch the queue has (else exit 3)."""
    from ..core.operations.batchops import read

    name = check_batch(options["after"])
    if options["delay"] or options["tenant"] is not None:
        raise UsageError("--after holds items until the batch is done: not with --delay or "
                         "--tenant")
    if read(wq, name, queue) is None:
        raise NothingToDo(f"no batch {name!r} in {queue} to push --after")


def _stopped(tally: "_Tally") -> Interrupted:
    """The error of a push stopped where nothing was in flight: the count is exact."""
    return Interrupted(f"interrupted: push: {_exactly(tally)}")


def _exactly(tally: "_Tally") -> str:
    return (f"exactly {tally.describe()}, nothing after them; to go on, push only the rest "
            f"of the input (pushed again, items without an id would be stored twice)")

def _stream(st: State, batches: Iterator[bulk.Pushed], tally: "_Tally",
            progress: Callable[[], None], not_sent: Callable[[int], str] | None) -> None:
    """Count (and print) each stored batch. A failure ends in ONE error line that says how
    many items were stored, exactly where that is known: before a bad line; before a
    server that could not be reached; at a Ctrl-C, once the batches in flight are read."""
    try:
        try:
            for batch in batches:
                tally.add_pushed(batch)
                progress()
        except KeyboardInterrupt as exc:
            if not isinstance(exc, bulk.Drained):  # here: the stream reads what it sent
                _drain(batches, tally)
            raise
    except bulk.Drained:
        raise _stopped(tally) from None
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: push: {tally.describe()} and confirmed; "
                          f"{IN_FLIGHT}") from None
    except BrokenPipeError:  # stdout closed (`| head`): silent 141, but say what was stored:
        tally.closed = True  # exactly, once the batches in flight are read (and not printed)
        exact = False
        try:
            _drain(batches, tally)
        except bulk.Drained:
            exact = True
        except KeyboardInterrupt:  # (a Ctrl-C while draining: the bound, not the count)
            pass
        message("rq-cli: push: stdout was closed; " + (
            _exactly(tally) if exact else f"{tally.describe()} and confirmed; {IN_FLIGHT}"))
        raise
    except Unconfirmed as exc:  # stored, not confirmed: named, never pushed again here
        raise _unconfirmed(exc, tally, not_sent) from None
    except BadInputError as exc:  # exact: all before the bad line is stored, none after
        raise BadInputError(f"{exc}; push: {tally.describe()} before it, nothing after "
                            f"it") from None
    except Exception as exc:
        from ..connection.connect import translate_error

        err = exc if isinstance(exc, RqError) else \
            translate_error(exc, st.urls_used[-1]) if st.urls_used else None
        if not isinstance(err, ServerError):
            raise
        said = str(err).rstrip(".")
        if "connecting to" in str(exc):  # no connection: nothing was sent on it
            raise type(err)(f"{said}; push: {tally.describe()} before it, nothing after "
                            f"it" if tally.items else f"{said}; push: nothing stored") from None
        raise type(err)(f"{said}; push: {tally.describe()} and confirmed before it; "
                        f"{IN_FLIGHT}") from None


def _unconfirmed(exc: Unconfirmed, tally: "_Tally",
                 not_sent: Callable[[int], str] | None = None) -> Unconfirmed:
    """Durability (``wait_replicas``): the ids of the items stored but not confirmed in time
    on stderr, one ``rq-cli: unconfirmed: ID`` line each, so a script can push them again
    with their ids (stdout printed only the confirmed items); then the one error line,
    which says too which input lines were never sent (``not_sent``, given the items sent:
    a bulk push sends nothing more once a batch is not confirmed)."""
    message("".join(f"rq-cli: unconfirmed: {i}\n" for i in exc.ids).rstrip("\n"))
    said = str(exc).rstrip(".")
    rest = not_sent(tally.items + len(exc.ids)) if not_sent is not None else ""
    return Unconfirmed(f"{said}; push: {tally.describe()} and confirmed (printed), then "
                       f"{plural(len(exc.ids), 'item')} not confirmed (named above: push them "
                       f"again with their ids, --with-ids){rest}", ids=exc.ids,
                       reply=exc.reply)


def _not_sent(place: reading.Place, read: Iterable[bytes], sent: int) -> str:
    """``; input lines X to Y (N lines) were never sent: push them next`` for a push that
    stopped after taking ``sent`` items (the rest of stdin is read to count its lines; a
    Ctrl-C or SIGTERM stops the count), or "" where nothing was left unsent or where it is
    not known which line the items sent end at."""
    first = place.line_after(sent)
    if first is None:
        return ""
    try:
        total = place.taken + sum(1 for _ in read)
    except KeyboardInterrupt:
        return f"; the input from line {first} on was never sent: push it next"
    if total < first:
        return ""
    return (f"; input lines {first} to {total} ({plural(total - first + 1, 'line')}) were "
            f"never sent: push them next")


def _drain(batches: Iterator[bulk.Pushed], tally: "_Tally") -> None:
    """Ctrl-C while counting: the stream reads the replies of the batches it sent, which
    are counted too; it ends in :class:`~rq_cli.core.pushing.bulk.Drained` (or KeyboardInterrupt
    where it cannot tell)."""
    throw = getattr(batches, "throw", None)
    if throw is None:
        return
    batch = throw(KeyboardInterrupt())
    while True:
        tally.add_pushed(batch)
        batch = next(batches)


class _Tally:
    """Counts results and prints them: per item (JSON lines, one write per batch) or summary."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.out, self.summary = Output(), True  # (until use)
        self.items = self.added = 0
        self.reasons: dict[str, int] = {}  # refused items by reason (the summary says why)
        self.rows: list[dict[str, Any]] = []
        self.counted: bulk.Pushed | None = None  # the batch counted last (add_pushed)
        self.closed = False  # stdout was closed: count, print nothing

    def use(self, out: Output, summary: bool) -> None:
        """Print to ``out``: a summary, or a line per item."""
        self.out, self.summary = out, summary

    def add(self, results: list[PushResult]) -> None:
        added = sum(1 for r in results if r.added)
        for r in results:
            if r.reason:
                self.reasons[r.reason] = self.reasons.get(r.reason, 0) + 1
        text = "" if self.summary or not self.out.json else \
            "".join(_result_line(r) + "\n" for r in results)
        self.out.write(text)
        self.items += len(results)
        self.added += added
        if not self.summary and not self.out.json:
            self.rows.extend({"id": r.id, "added": r.added, "reason": r.reason or None}
                             for r in results)

    def add_pushed(self, batch: bulk.Pushed) -> None:
        """``add`` for a batch of a stdin push (JSON lines or a summary, never a table). The
        batch counted last, given again, is not counted again (after a Ctrl-C, the stream
        hands out again the batch it had handed out: bulk.stream)."""
        if batch is self.counted:
            return
        ids, flags = batch
        added = flags.count("1")
        text = ""
        if not self.summary and not self.closed:
            if ids and added == len(ids) and _plain(ids):  # usual: one join for the batch
                text = '{"id":"' + _ADDED_SEP.join(ids) + '","added":true}\n'
            else:
                text = "".join([_line(i, f == "1", bulk.REASONS.get(f)) + "\n"
                                for i, f in zip(ids, flags, strict=True)])
        try:
            self.out.write(text)
        finally:  # (stdout closed: the batch is stored all the same)
            self.counted = batch
            self.items += len(ids)
            self.added += added
            if added < len(ids):
                for flag, reason in bulk.REASONS.items():
                    if n := flags.count(flag):
                        self.reasons[reason] = self.reasons.get(reason, 0) + n

    def last_words(self) -> str:
        """The line of a second Ctrl-C or SIGTERM, which ends the push at once (cli.signals):
        what was printed is stored; what was being sent or printed may be too."""
        return (f"interrupted twice: push: stopped at once; {self.describe()} and confirmed; "
                f"{IN_FLIGHT}")

    def describe(self) -> str:
        dups = self.items - self.added
        return f"{plural(self.items, 'item')} stored ({self.added} added, " \
               f"{plural(dups, 'duplicate')})"

    def finish(self, table: bool) -> None:
        if self.summary:
            self.out.record({"queue": self.queue, "items": self.items, "added": self.added,
                             "duplicates": self.items - self.added,
                             "reasons": {r: self.reasons.get(r, 0)
                                         for r in bulk.REASONS.values()}},
                            title=f"push {self.queue}")
        elif self.rows and table:
            self.out.table(self.rows, _COLUMNS)


#: where a batch was sent and its reply not read
IN_FLIGHT = ("a batch in flight may also have been stored (re-running is safe only with ids: "
             "--with-ids or --id-from-data)")


def plural(n: int, noun: str) -> str:
    """``1 item``, ``2 items``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _result_line(r: PushResult) -> str:
    return _line(r.id, r.added, r.reason)


def _line(item_id: str, added: bool, reason: str | None = None) -> str:
    # the same output as json_line, built directly
    return '{"id":' + encode_basestring_ascii(item_id) + (
        ',"added":true}' if added else ',"added":false,"reason":"' + (reason or "duplicate")
        + '"}')


_ADDED_SEP = '","added":true}\n{"id":"'


def _plain(ids: list[str]) -> bool:
    """Whether no id needs escaping in JSON (random and --id-from-data ids never do)."""
    joined = "".join(ids)
    return len(encode_basestring_ascii(joined)) == len(joined) + 2


_COLUMNS = [Column("id"), Column("added"), Column("reason", kind="words", optional=True)]


def _size(stream: Any) -> int | None:
    """Bytes left to read when stdin is a regular file (for the progress bar), else None."""
    try:
        info = os.fstat(stream.fileno())
        if stat.S_ISREG(info.st_mode):
            return info.st_size or None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _tell(stream: Any) -> int | None:
    try:
        return int(stream.tell())
    except (OSError, ValueError, AttributeError):
        return None
