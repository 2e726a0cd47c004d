"""Shared fixtures of the batch suite: tiny recorded episodes (once per session), a real
S3 server (moto in server mode on 127.0.0.1) and a real local Ray, each started once and
stopped at the end of the session."""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session

RECORD = "plugin://fastsim/record"
BUCKET = "fsr-test"


def write_run(folder: Path, *, duration: float = 0.3, name: str = "{name}-seed{seed}-{episode:04d}.fsr") -> Path:
    """A short synthetic Run whose output name is a sweep template."""
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "batch-test", "backend": "synthetic",
        "scenario": {"scene": {}},
        "runtime": {"sensor_hz": 30.0, "duration_s": duration},
        "plugins": {"record": {"use": RECORD, "config": {"output": {"name": name}}}},
    }))
    return path


@pytest.fixture(scope="session")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three committed episodes (seeds 1..3), recorded once in this process; read-only."""
    root = tmp_path_factory.mktemp("episodes")
    run = write_run(root)
    out: list[Path] = []
    for seed in (1, 2, 3):
        result = run_session(prepare_run(run, seed=seed, episode=seed - 1, sweep=True), root / "data")
        assert result.outcome.ok, result.outcome.reason
        out.extend(Path(p) for p in result.outcome.committed)
    return sorted(out)


@pytest.fixture
def dataset(episodes: list[Path], tmp_path: Path) -> Path:
    """A fresh folder with copies of the episodes (a test may change it)."""
    folder = tmp_path / "dataset"
    folder.mkdir()
    for path in episodes:
        shutil.copy2(path, folder / path.name)
    return folder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="package")
def s3_server() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 (a free port); the AWS variables point fsspec/s3fs at it."""
    moto_server = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_DEFAULT_REGION")}
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"})
    try:
        yield endpoint
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def bucket(s3_server: str, request: pytest.FixtureRequest) -> tuple[Any, str]:
    """A fresh, empty prefix in the test bucket: (s3fs filesystem, ``s3://bucket/prefix``)."""
    s3fs = pytest.importorskip("s3fs")
    fs = s3fs.S3FileSystem(endpoint_url=s3_server, key="testing", secret="testing", skip_instance_cache=True)
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    prefix = f"{BUCKET}/{request.node.name[:40]}-{secrets.token_hex(3)}"
    return fs, f"s3://{prefix}"


@pytest.fixture(scope="package")
def ray_local(s3_server: str) -> Iterator[Any]:
    """A real local Ray (2 CPUs, no dashboard) with token auth on: the token lives in the
    environment (``RAY_AUTH_TOKEN``), never in ``~/.ray``; its temp dir is short-lived.
    Started after the S3 server so that tasks inherit the endpoint."""
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_USAGE_STATS_ENABLED")}
    # before Ray is imported: its config reads the auth mode once, at import
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                       "RAY_USAGE_STATS_ENABLED": "0"})
    ray = pytest.importorskip("ray")
    try:  # Ray already imported by an earlier test: re-read the mode, as Ray's own test utilities do
        from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
    except ImportError:  # pragma: no cover - another Ray version
        pass
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, _temp_dir=temp,
                 logging_level="ERROR", log_to_driver=False)
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
