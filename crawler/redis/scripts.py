"""Lua scripts sent the same way to a single Redis and to a Redis Cluster.

redis-py's cluster pipeline refuses ``EVALSHA`` by its method and cannot load scripts, so a
script queued on any pipeline is sent as a plain ``EVALSHA`` command (routed by its first key in
a cluster). A node that does not know the script (a replica promoted by a failover, a server
restarted) answers ``NOSCRIPT``: ``load_scripts`` loads every script of the process on every
master, and the link sends the operation again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import redis
from redis.client import Pipeline
from redis.cluster import ClusterPipeline
from redis.commands.core import Script

T = TypeVar("T")

_SOURCES: dict[str, str] = {}
"""Every script this process registered, by digest: the same few texts whatever the crawl."""

SERVER_TIME = "local t = redis.call('TIME') return {t[1], t[2]}"
"""The clock of the node that owns KEYS[1] (a cluster's nodes each have their own)."""


def register_script(client: Any, source: str) -> Script:
    script = client.register_script(source)
    _SOURCES[script.sha] = source
    return script


def call_script(script: Script, keys: Sequence[Any], args: Sequence[Any], client: Any = None) -> Any:
    """Run ``script`` (or, with a pipeline as ``client``, queue it there)."""
    if isinstance(client, ClusterPipeline):
        # Routed by its first key here: left to itself, the pipeline asks the server for each
        # command's keys (COMMAND GETKEYS), one round trip a command. A slot moved since is
        # followed (MOVED) as for any command.
        node = client.get_node_from_key(keys[0])
        return client.execute_command("EVALSHA", script.sha, len(keys), *keys, *args, target_nodes=node)
    if isinstance(client, Pipeline):
        return client.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
    return script(keys=list(keys), args=list(args), client=client)


def load_scripts(client: Any) -> None:
    """Load every script of the process where commands run (every master of a cluster)."""
    for source in list(_SOURCES.values()):
        client.script_load(source)


def with_scripts(client: Any, run: Callable[[], T]) -> T:
    """``run()``, once more after loading the scripts if a node did not know one."""
    try:
        return run()
    except redis.exceptions.NoScriptError:
        load_scripts(client)
        return run()


def server_time(client: Any, key: str) -> float:
    """Seconds by the clock of the node that holds ``key``."""
    seconds, micros = client.execute_command("EVAL", SERVER_TIME, 1, key)  # a cluster pipeline has no eval()
    return int(seconds) + int(micros) / 1e6


def is_missing_script(error: BaseException) -> bool:
    return isinstance(error, redis.exceptions.NoScriptError)
