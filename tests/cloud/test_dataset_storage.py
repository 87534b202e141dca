"""Dataset storage on a live secure controller against a real S3 server (moto in server
mode): a project registers a bucket and keys (sealed at rest, shown masked), its cluster's
servers get ``~/.aws`` files and ``AWS_*`` variables, and a workload in a server lists,
reads and writes objects with them; another project sees none of it; suspend and resume
keep it; attach, detach and delete follow their rules; bad input gets a 4xx."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from vpod.cli.cloud_client import write_config
from vpod.client import AsyncCloudClient, CloudClient
from vpod.cloud.drivers.rclone_mount import unmount
from vpod.cloud.model.datasets import StorageEndpoint

from .conftest import error, in_shell, ok, run_task
from .live import LiveCloud, isolated_networks, start_cloud, stop_cloud
from .s3server import moto_server

V4 = "g2a-ai-fast-v1pod-4"
VPOD = str(Path(sys.executable).with_name("vpod"))
BUCKET = "training-data"
OWNER_KEYS = ("AKIAOWNERKEY00000001", "owner-secret-Vk3pQ9x/Zt8wLm2R+sN4")
OTHER_KEYS = ("AKIAOTHERKEY0000009", "other-secret-Jh7Tq2Wz/Xc5Bn8M+pK1")
WORKLOAD = """
import boto3, os
s3 = boto3.client("s3")
bucket = os.environ["VPOD_DATASET_BUCKET"]
print(sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])))
print(s3.get_object(Bucket=bucket, Key="seed.txt")["Body"].read().decode())
s3.put_object(Bucket=bucket, Key="from-server.txt", Body=os.environ["VPOD_SERVER"].encode())
"""


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, s3_url: str) -> Iterator[LiveCloud]:
    endpoint = StorageEndpoint("moto", s3_url, "eu-west-1", path_style=True)
    cloud = start_cloud(
        tmp_path_factory.mktemp("datasets"), settings={"storage_endpoints": (endpoint,)}
    )
    try:
        yield cloud
    finally:
        stop_cloud(cloud)
        mounts = cloud.data_dir / "cloud" / "mounts"
        for entry in mounts.iterdir() if mounts.is_dir() else ():
            unmount(entry)  # a failed test may leave a mount (and its rclone) behind


def s3(url: str, keys: tuple[str, str]) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name="eu-west-1",
        aws_access_key_id=keys[0],
        aws_secret_access_key=keys[1],
    )


def register(http: Any, name: str, keys: tuple[str, str], bucket: str = BUCKET) -> Any:
    body = {
        "name": name,
        "endpoint": "moto",
        "bucket": bucket,
        "access_key_id": keys[0],
        "secret_access_key": keys[1],
    }
    return http.post("/dataset-storage", json=body)


def server_root(live: LiveCloud, http: Any, cluster: str) -> Path:
    """The host's path to the cluster's first server's root (the shell info names none)."""
    host = ok(http.get(f"/clusters/{cluster}/shell"))["host"]
    for state in (live.data_dir / "cloud" / "servers").glob("*/state.json"):
        if json.loads(state.read_text())["name"] == host:
            return state.parent / "root"
    raise AssertionError(f"no server {host} on this host")


def test_a_workload_uses_its_projects_bucket_and_nobody_elses(live: LiveCloud, s3_url: str) -> None:
    s3(s3_url, OWNER_KEYS).create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    s3(s3_url, OWNER_KEYS).put_object(Bucket=BUCKET, Key="seed.txt", Body=b"hello datasets")
    owner, other = live.project("ds-owner"), live.project("ds-other")
    replies: list[str] = []
    with live.client(owner) as http:
        reply = register(http, "train", OWNER_KEYS)
        replies.append(reply.text)
        storage = ok(reply, 201)
        assert storage["access_key"] == "AKIA…0001"
        assert storage["clusters"] == []
        task = run_task(
            live,
            http,
            "POST",
            "/clusters",
            json={"name": "ds-1", "flavor": V4, "dataset_storage": "train"},
        )
        assert task["state"] == "FINISHED", task
        done = in_shell(http, "ds-1", "python3 -c " + shlex.quote(WORKLOAD))
        assert done.returncode == 0, done.stderr
        listed, seed = done.stdout.splitlines()[:2]
        assert listed == "['seed.txt']"
        assert seed == "hello datasets"
        root = server_root(live, http, "ds-1")
        for response in (http.get("/dataset-storage"), http.get("/dataset-storage/train")):
            replies.append(response.text)
        assert ok(http.get("/dataset-storage/train"))["clusters"] == ["ds-1"]
        held = {"name": "train", "mount_path": None}
        assert ok(http.get("/clusters/ds-1"))["dataset_storage"] == held
        assert [c["dataset_storage"] for c in ok(http.get("/clusters"))] == [held]
    written = s3(s3_url, OWNER_KEYS).get_object(Bucket=BUCKET, Key="from-server.txt")
    assert written["Body"].read().decode() == "ds-1-poplar-1"

    credentials = root / "home/.aws/credentials"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    text = credentials.read_text()
    assert f"aws_access_key_id = {OWNER_KEYS[0]}" in text
    assert "[vpod-datasets]" in text
    assert "[default]" in text
    config = (root / "home/.aws/config").read_text()
    port = s3_url.rsplit(":", 1)[1]
    if isolated_networks():  # the server dials the loopback endpoint at its gateway
        assert re.search(rf"endpoint_url = http://169\.254\.\d+\.\d+:{port}\n", config), config
    else:
        assert f"endpoint_url = {s3_url}" in config
    assert "addressing_style = path" in config
    env = (root / "etc/environment").read_text()
    assert f"AWS_SECRET_ACCESS_KEY={OWNER_KEYS[1]}" in env.replace("'", "")
    assert stat.S_IMODE((root / "etc/environment").stat().st_mode) == 0o600

    with live.client(other) as http:
        assert ok(http.get("/dataset-storage")) == []
        error(http.get("/dataset-storage/train"), 404, "NOT_FOUND")
        error(http.get(f"/dataset-storage/{storage['id']}"), 404, "NOT_FOUND")
        error(http.delete(f"/dataset-storage/{storage['id']}"), 404, "NOT_FOUND")
        mine = ok(register(http, "train", OTHER_KEYS, bucket="other-data"), 201)
        assert mine["access_key"] == "AKIA…0009"
        refused = http.post(
            "/clusters", json={"name": "ds-x", "flavor": V4, "dataset_storage": storage["id"]}
        )
        error(refused, 404, "NOT_FOUND")
        task = run_task(
            live,
            http,
            "POST",
            "/clusters",
            json={"name": "ds-2", "flavor": V4, "dataset_storage": "train"},
        )
        assert task["state"] == "FINISHED", task
        other_root = server_root(live, http, "ds-2")
    other_files = "".join(
        p.read_text(errors="replace") for p in other_root.rglob("*") if p.is_file()
    )
    assert OTHER_KEYS[1] in other_files
    assert OWNER_KEYS[0] not in other_files
    assert OWNER_KEYS[1] not in other_files

    for text in replies:
        assert OWNER_KEYS[1] not in text
        assert OWNER_KEYS[0] not in text
    searched = [n for n in os.listdir(live.data_dir) if n.startswith("vpod.db")]
    assert "vpod.db" in searched
    for name in searched:  # the database and its write-ahead log, byte by byte
        data = (live.data_dir / name).read_bytes()
        for key in (*OWNER_KEYS, *OTHER_KEYS):
            assert key.encode() not in data, f"{key} in plain text in {name}"
    key_file = live.data_dir / "dataset-storage.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_suspend_and_resume_keep_the_configuration(live: LiveCloud) -> None:
    with live.client(live.project("ds-owner")) as http:
        root = server_root(live, http, "ds-1")
        assert run_task(live, http, "POST", "/clusters/ds-1/suspend")["state"] == "FINISHED"
        (root / "home/.aws/credentials").unlink()  # as if the server came back re-imaged
        assert run_task(live, http, "POST", "/clusters/ds-1/resume")["state"] == "FINISHED"
        assert OWNER_KEYS[1] in (root / "home/.aws/credentials").read_text()
        done = in_shell(http, "ds-1", 'echo "$AWS_ACCESS_KEY_ID $AWS_ENDPOINT_URL"')
        assert done.stdout.split()[0] == OWNER_KEYS[0]
        done = in_shell(http, "ds-1", "python3 -c " + shlex.quote(WORKLOAD))
        assert done.returncode == 0, done.stderr


def test_attached_storage_is_not_deleted_and_detach_takes_it_away(live: LiveCloud) -> None:
    with live.client(live.project("ds-owner")) as http:
        message = error(http.delete("/dataset-storage/train"), 409, "FAILED_PRECONDITION")
        assert "attached to cluster(s) ds-1" in message
        assert "detach it first" in message
        ok(register(http, "spare", OWNER_KEYS), 201)
        refused = http.post("/clusters/ds-1/dataset-storage", json={"storage": "spare"})
        assert "detach it first" in error(refused, 409, "FAILED_PRECONDITION")
        root = server_root(live, http, "ds-1")
        assert run_task(live, http, "DELETE", "/clusters/ds-1/dataset-storage")["state"] == (
            "FINISHED"
        )
        assert not (root / "home/.aws/credentials").exists()
        assert "AWS_" not in (root / "etc/environment").read_text()
        assert ok(http.get("/dataset-storage/train"))["clusters"] == []
        again = http.delete("/clusters/ds-1/dataset-storage")
        error(again, 409, "FAILED_PRECONDITION")
        ok(http.delete("/dataset-storage/train"), 204)
        task = run_task(
            live, http, "POST", "/clusters/ds-1/dataset-storage", json={"storage": "spare"}
        )
        assert task["state"] == "FINISHED", task
        assert OWNER_KEYS[1] in (root / "home/.aws/credentials").read_text()
        assert ok(http.get("/dataset-storage/spare"))["clusters"] == ["ds-1"]


def test_bad_input_is_refused_with_a_4xx(live: LiveCloud) -> None:
    with live.client(live.project("ds-bad")) as http:
        body = {
            "name": "data",
            "endpoint": "moto",
            "bucket": BUCKET,
            "access_key_id": "AKIAEXAMPLE",
            "secret_access_key": "s3cret",
        }
        message = error(
            http.post("/dataset-storage", json={**body, "endpoint": "nowhere"}),
            400,
            "INVALID_ARGUMENT",
        )
        assert "the endpoints are moto" in message
        error(http.post("/dataset-storage", json={**body, "bucket": ""}), 400, "INVALID_ARGUMENT")
        error(
            http.post("/dataset-storage", json={**body, "bucket": "Bad_Bucket"}),
            400,
            "INVALID_ARGUMENT",
        )
        error(
            http.post("/dataset-storage", json={**body, "secret_access_key": ""}),
            400,
            "INVALID_ARGUMENT",
        )
        spaced = http.post("/dataset-storage", json={**body, "secret_access_key": "a b\nc"})
        assert "a b" not in error(spaced, 400, "INVALID_ARGUMENT")
        error(http.post("/dataset-storage", json={**body, "name": "x"}), 400, "INVALID_ARGUMENT")
        huge = http.post(
            "/dataset-storage",
            content=b'{"name": "' + b"x" * (10 << 20) + b'"}',
            headers={"Content-Type": "application/json"},
        )
        assert huge.status_code == 413, huge.text
        ok(http.post("/dataset-storage", json=body), 201)
        error(http.post("/dataset-storage", json=body), 409, "ALREADY_EXISTS")
        error(
            http.post("/clusters/no-such/dataset-storage", json={"storage": "data"}),
            404,
            "NOT_FOUND",
        )
        error(http.get("/dataset-storage/no-such"), 404, "NOT_FOUND")
        bad_mount = http.post(
            "/clusters",
            json={"name": "ds-m", "flavor": V4, "dataset_storage": "data", "dataset_mount": "/etc"},
        )
        error(bad_mount, 400, "INVALID_ARGUMENT")
        lone_mount = http.post(
            "/clusters", json={"name": "ds-m", "flavor": V4, "dataset_mount": "/mnt/data"}
        )
        error(lone_mount, 400, "INVALID_ARGUMENT")
        endpoints = ok(http.get("/storage-endpoints"))
        assert [e["name"] for e in endpoints] == ["moto"]


def test_the_storage_commands_and_the_client(live: LiveCloud, tmp_path: Path) -> None:
    config = tmp_path / "vpod-cli.toml"
    write_config(config, live.url, live.project("ds-cli"), "ds-cli")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    env["VPOD_CONFIG"] = str(config)
    outputs: list[str] = []

    def vpod(*args: str, code: int = 0, stdin: str = "") -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [VPOD, *args], env=env, input=stdin, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == code, done.stderr
        outputs.extend((done.stdout, done.stderr))
        return done

    register_args = ["storage", "register", "cli-data", "--endpoint", "moto", "--bucket", BUCKET]
    made = json.loads(
        vpod(
            *register_args,
            "--access-key",
            OWNER_KEYS[0],
            "--secret-key-file",
            "-",
            "--json",
            stdin=OWNER_KEYS[1] + "\n",
        ).stdout
    )
    assert made["access_key"] == "AKIA…0001"
    assert made["clusters"] == []
    assert "AKIA…0001" in vpod("storage", "list").stdout
    assert "(sealed; never shown)" in vpod("storage", "show", "cli-data").stdout
    assert json.loads(vpod("storage", "endpoints", "--json").stdout)[0]["name"] == "moto"
    bad = vpod(
        "storage",
        "register",
        "bad-endpoint",
        "--endpoint",
        "nowhere",
        "--bucket",
        BUCKET,
        "--access-key",
        "AKIAEXAMPLE",
        "--secret-key-file",
        "-",
        stdin="s3cret",
        code=2,
    )
    assert len(bad.stderr.strip().splitlines()) == 1
    assert "nowhere" in bad.stderr
    no_secret = vpod(
        *register_args[:2], "no-secret", *register_args[3:], "--access-key", "AKIAX", code=2
    )
    assert "--secret-key-file" in no_secret.stderr
    lone_mount = vpod("cluster", "create", "c", "--flavor", V4, "--mount", "/mnt/d", code=2)
    assert "--mount needs --storage" in lone_mount.stderr
    vpod("storage", "show", "no-such", code=1)
    assert "dataset storage" in vpod("storage", "--help").stdout.lower()
    created = vpod(
        "cluster", "create", "cli-1", "--flavor", V4, "--storage", "cli-data", "--wait", "--json"
    )
    assert json.loads(created.stdout)["state"] == "FINISHED"
    assert "cli-data" in vpod("cluster", "show", "cli-1").stdout
    held = vpod("storage", "delete", "cli-data", code=1)
    assert "detach it first" in held.stderr
    detached = vpod("storage", "detach", "cli-1", "--wait", "--json")
    assert json.loads(detached.stdout)["state"] == "FINISHED"
    attached = vpod("storage", "attach", "cli-data", "cli-1", "--wait", "--json")
    assert json.loads(attached.stdout)["state"] == "FINISHED"
    assert json.loads(vpod("storage", "show", "cli-data", "--json").stdout)["clusters"] == ["cli-1"]
    vpod("cluster", "delete", "cli-1", "--wait")
    vpod("storage", "delete", "cli-data")
    assert json.loads(vpod("storage", "list", "--json").stdout) == []

    with CloudClient.from_config(config) as client:
        made_by_client = client.register_dataset_storage(
            "by-client", "moto", BUCKET, OWNER_KEYS[0], OWNER_KEYS[1]
        )
        assert made_by_client.access_key == "AKIA…0001"
        assert [s.name for s in client.list_dataset_storage()] == ["by-client"]
        assert client.storage_endpoints()[0].path_style is True
        client.delete_dataset_storage("by-client")
        assert client.list_dataset_storage() == []

    async def through_asyncio() -> list[str]:
        async with AsyncCloudClient.from_config(config) as client:
            await client.register_dataset_storage(
                "by-async", "moto", BUCKET, OWNER_KEYS[0], OWNER_KEYS[1]
            )
            names = [s.name for s in await client.list_dataset_storage()]
            assert (await client.get_dataset_storage("by-async")).access_key == "AKIA…0001"
            await client.delete_dataset_storage("by-async")
            return names

    assert asyncio.run(through_asyncio()) == ["by-async"]
    for text in outputs:
        assert OWNER_KEYS[1] not in text
        assert OWNER_KEYS[0] not in text


def _eventually(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_bucket_is_mounted_where_the_tenant_chose(live: LiveCloud, s3_url: str) -> None:
    problem = live.cloud.ctx.compute.mount_problem()
    if problem is not None:
        pytest.skip(f"this host cannot mount buckets: {problem}")
    bucket = "mounted-data"
    client = s3(s3_url, OTHER_KEYS)
    client.create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    client.put_object(Bucket=bucket, Key="seed.txt", Body=b"mounted seed")
    with live.client(live.project("ds-mount")) as http:
        ok(register(http, "mounted", OTHER_KEYS, bucket=bucket), 201)
        body = {
            "name": "ds-3",
            "flavor": V4,
            "dataset_storage": "mounted",
            "dataset_mount": "/mnt/datasets",
        }
        task = run_task(live, http, "POST", "/clusters", json=body)
        assert task["state"] == "FINISHED", task
        root = server_root(live, http, "ds-3")
        held = ok(http.get("/clusters/ds-3"))["dataset_storage"]
        assert held == {"name": "mounted", "mount_path": "/mnt/datasets"}
        shown = root / "mnt/datasets"
        assert shown.is_symlink()
        assert not Path(os.readlink(shown)).is_relative_to(root.resolve())
        done = in_shell(
            http,
            "ds-3",
            'cat "$VPOD_DATASET_MOUNT/seed.txt" && echo from-mount > "$VPOD_DATASET_MOUNT/new.txt"',
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "mounted seed"
        uploaded = _eventually(lambda: client.get_object(Bucket=bucket, Key="new.txt"))
        assert uploaded["Body"].read() == b"from-mount\n"

        mount_point = Path(os.readlink(shown))
        assert run_task(live, http, "POST", "/clusters/ds-3/suspend")["state"] == "FINISHED"
        assert not os.path.ismount(mount_point)
        assert run_task(live, http, "POST", "/clusters/ds-3/resume")["state"] == "FINISHED"
        assert os.path.ismount(mount_point)
        again = in_shell(http, "ds-3", 'cat "$VPOD_DATASET_MOUNT/new.txt"')
        assert again.stdout == "from-mount\n"

        detached = run_task(live, http, "DELETE", "/clusters/ds-3/dataset-storage")
        assert detached["state"] == "FINISHED", detached
        assert not os.path.ismount(mount_point)
        assert not shown.is_symlink()
        deleted = run_task(live, http, "DELETE", "/clusters/ds-3")
        assert deleted["state"] == "FINISHED", deleted
    assert client.get_object(Bucket=bucket, Key="seed.txt")["Body"].read() == b"mounted seed"


def test_removing_a_project_forgets_its_storage(live: LiveCloud) -> None:
    token = live.project("ds-gone")
    with live.client(token) as http:
        ok(register(http, "leaving", OWNER_KEYS), 201)
    records = live.cloud.ctx.records
    assert [s.name for s in live.run(records.list_storages("ds-gone"))] == ["leaving"]
    with live.admin() as admin:
        ok(admin.delete("/admin/projects/ds-gone"), 204)
    assert live.run(records.list_storages("ds-gone")) == []


def test_a_withdrawn_endpoint_never_blocks_a_resume(live: LiveCloud) -> None:
    """The operator removed the endpoint from cloud.toml: resuming a cluster holding storage
    on it still works, with a warning, and the servers lose the storage; attaching says why."""
    with live.client(live.project("ds-other")) as http:
        root = server_root(live, http, "ds-2")
    assert (root / "home/.aws/credentials").exists()
    saved = dict(live.settings)
    live.settings = {}
    live.restart()
    try:
        with live.client(live.project("ds-other")) as http:
            assert run_task(live, http, "POST", "/clusters/ds-2/suspend")["state"] == "FINISHED"
            resumed = run_task(live, http, "POST", "/clusters/ds-2/resume")
            assert resumed["state"] == "FINISHED", resumed
            assert any("no dataset storage" in w for w in resumed["warnings"]), resumed
            assert not (root / "home/.aws/credentials").exists()
            refused = http.post("/clusters/ds-2/dataset-storage", json={"storage": "train"})
            assert "is not offered here" in error(refused, 400, "INVALID_ARGUMENT")
    finally:
        live.settings = saved
        live.restart()


def test_an_attach_the_servers_refuse_is_rolled_back(live: LiveCloud, tmp_path: Path) -> None:
    """The tenant made ~/.aws a link to a directory elsewhere: nothing is written there, the
    attach task ends in ERROR and the cluster holds no storage afterwards."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with live.client(live.project("ds-other")) as http:
        if ok(http.get("/clusters/ds-2"))["dataset_storage"] is not None:
            detached = run_task(live, http, "DELETE", "/clusters/ds-2/dataset-storage")
            assert detached["state"] == "FINISHED", detached
        root = server_root(live, http, "ds-2")
        aws = root / "home/.aws"
        if aws.exists():
            for child in aws.iterdir():
                child.unlink()
            aws.rmdir()
        aws.symlink_to(elsewhere)
        failed = run_task(
            live, http, "POST", "/clusters/ds-2/dataset-storage", json={"storage": "train"}
        )
        assert failed["state"] == "ERROR", failed
        assert ok(http.get("/clusters/ds-2"))["dataset_storage"] is None
        assert ok(http.get("/dataset-storage/train"))["clusters"] == []
    assert list(elsewhere.iterdir()) == []


def test_a_lost_key_file_is_not_replaced_behind_the_operators_back(
    live: LiveCloud, caplog: pytest.LogCaptureFixture
) -> None:
    key_file = live.data_dir / "dataset-storage.key"
    kept = key_file.read_bytes()
    key_file.unlink()
    live.restart()
    try:
        assert not key_file.exists()
        assert any("is missing: restore it" in r.getMessage() for r in caplog.records)
        with live.client(live.project("ds-owner")) as http:
            assert run_task(live, http, "POST", "/clusters/ds-1/suspend")["state"] == "FINISHED"
            resumed = run_task(live, http, "POST", "/clusters/ds-1/resume")
            assert resumed["state"] == "FINISHED", resumed
            assert any("cannot be unsealed" in w for w in resumed["warnings"]), resumed
    finally:
        key_file.unlink(missing_ok=True)
        key_file.write_bytes(kept)
        key_file.chmod(0o600)
        live.restart()
