"""A Redis Cluster of the test's own on loopback: three masters and a replica of each, six
``redis-server`` processes in cluster mode, each in a directory of its own, stopped by their
PIDs. A short node timeout makes a failover happen within seconds."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.server_process import ServerProcess, listening
from tests.throwaway_redis import redis_server_command

NODE_TIMEOUT_MS = 2000
BUS_OFFSET = 10_000
"""A node's cluster bus listens on its port plus this."""


def free_node_port() -> int:
    """A port free on loopback, with its cluster bus port free too."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + BUS_OFFSET > 65535:
            port -= BUS_OFFSET
        try:
            for candidate in (port, port + BUS_OFFSET):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port


class ClusterNode(ServerProcess):
    name = "redis-server (cluster node)"

    def __init__(self, root: Path, port: int):
        self.root = root
        self.port = port

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> ClusterNode:
        command = redis_server_command(self.root, self.port) + [
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            "--appendonly", "no",
            "--save", "",
            "--repl-diskless-sync-delay", "0",  # a replica's first sync at once, not 5 s later
            "--daemonize", "no",
        ]  # fmt: skip
        return self._launch(command, self.root / "redis.log", listening("127.0.0.1", self.port))

    def role(self) -> str:
        """``master`` or ``slave``, as the node says (``down`` if it does not answer)."""
        try:
            return str(self.client().info("replication").get("role"))
        except redis.RedisError:
            return "down"

    def kill(self) -> None:
        """SIGKILL, as a machine that dies: no chance to tell the cluster."""
        assert self._process is not None
        self._process.send_signal(signal.SIGKILL)
        self._process.wait()
        self._process = None


@dataclass
class RedisCluster:
    root: Path
    nodes: list[ClusterNode] = field(default_factory=list)

    @property
    def url(self) -> str:
        """A URL naming one node (the last: a replica), as a user would give any of them."""
        return f"redis://{self.nodes[-1].address}/0"

    def start(self) -> RedisCluster:
        self.nodes = [ClusterNode(self.root / f"node{i}", free_node_port()) for i in range(6)]
        try:
            for node in self.nodes:
                node.start()
            subprocess.run(
                ["redis-cli", "--cluster", "create", *(node.address for node in self.nodes)]
                + ["--cluster-replicas", "1", "--cluster-yes"],
                check=True,
                capture_output=True,
                timeout=60,
            )
            self.wait_until_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_until_ok(self, timeout: float = 30) -> None:
        """Until every live node says the cluster is ok and agrees on three masters, and every
        replica has its master's data: a replica still in its first sync never takes over (it
        counts as disconnected from its master for longer than allowed)."""
        deadline = time.monotonic() + timeout
        while True:
            if all(self._ok(node) for node in self.nodes if node._process is not None):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not become ok")
            time.sleep(0.2)

    @staticmethod
    def _ok(node: ClusterNode) -> bool:
        try:
            info = node.client().cluster("info")
        except redis.RedisError:
            return False
        if info.get("cluster_state") != "ok" or int(info.get("cluster_size", 0)) != 3:
            return False
        replication = node.client().info("replication")
        return replication.get("role") == "master" or replication.get("master_link_status") == "up"

    def masters(self) -> list[ClusterNode]:
        """The live nodes that are masters now."""
        return [node for node in self.nodes if node._process is not None and node.role() == "master"]

    def replica_of(self, master: ClusterNode) -> ClusterNode:
        info = master.client().info("replication")
        port = int(info["slave0"]["port"])
        (replica,) = [node for node in self.nodes if node.port == port]
        return replica

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
