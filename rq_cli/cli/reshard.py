"""``rq-cli reshard``: make a queue sharded, or change its shard count, on a live server
(docs/DESIGN.md section 7, the manual's "Sharded queues")."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import DryRunOpt, JsonOpt, QueueArg, state


def reshard(
    ctx: typer.Context,
    queue: QueueArg,
    shards: Annotated[int | None, typer.Argument(
        min=1, max=256, metavar="[N]", show_default=False,
        help="The number of shards the queue should have (1 to 256); default: the "
             "queue's shards = N in the config.")] = None,
    create: Annotated[bool, typer.Option(
        "--create", help="Make the queue if it exists nowhere on the server (without it, a "
                         "queue that holds nothing is refused unless the config names it "
                         "with shards = N: a typo makes no queue).")
    ] = False,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Write a new record over one that cannot be read (without it, "
                          "such a record is refused, exit 65); its shards are forgotten.")
    ] = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Spread a queue over N shards (created or resized live; retired shards drain).

    The server's record is the truth: a client whose config names another count follows
    it (with a note on stderr).

    Example: rq-cli reshard jobs 3 --create
    """
    from ..connection.connect import mask_url
    from ..core.operations.audit import Home, bind
    from ..core.sharding.resharding import reshard as do_reshard
    from ..errors import UsageError
    from ..output.render import message

    st = state(ctx)
    spec = st.spec(queue)
    shards = shards if shards is not None else spec.shards
    if shards is None:
        raise UsageError(f"give the number of shards (queue {queue!r} has no shards = N in "
                         f"the config)")
    client = st.client(spec.url, spec.password, spec)
    bind(Home(client, spec.prefix))  # (the audit trail: the queue's own, at its base prefix)
    plan = do_reshard(client, spec.prefix, shards, dry_run=dry_run,
                      create=create or spec.shards is not None,
                      replace=replace)
    st.output(as_json).record({
        "queue": queue, "prefix": spec.prefix, "url": mask_url(spec.url),
        "before": plan.before, "after": plan.after, "changed": plan.changed,
        "dry_run": dry_run, "live": plan.live, "draining": plan.draining,
        "placement": plan.placement})
    if plan.changed and not dry_run and spec.shards != shards:
        where = f"[queues.{queue}]" if spec.configured else f"a [queues.{queue}] table"
        message(f"rq-cli: note: set shards = {shards} in {where} of the config: a client "
                f"configured with another count follows the server, with a note")
