"""The at-head shortcut of Store.migrate: Alembic runs only when there is something to upgrade."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from vpod.store import Store
from vpod.store.engine import Database, create_store_engine
from vpod.store.migrate import SCRIPT_LOCATION, head_revision, upgrade
from vpod.store.schema import metadata
from vpod.store.schema_version import at_head, head_of, shipped_head, stored_revisions


def test_the_shipped_head_read_from_the_scripts_is_alembics_head() -> None:
    """The head read from the scripts' source is the one Alembic computes: it cannot go stale."""
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    assert shipped_head() == ScriptDirectory.from_config(config).get_current_head()
    assert shipped_head() == head_revision()


def _scripts(tmp_path: Path, scripts: dict[str, str]) -> Path:
    for name, body in scripts.items():
        (tmp_path / name).write_text(textwrap.dedent(body))
    (tmp_path / "__init__.py").write_text("")
    return tmp_path


def test_head_of_a_chain_is_its_newest_revision(tmp_path: Path) -> None:
    versions = _scripts(
        tmp_path,
        {
            "0001_a.py": 'revision = "0001"\ndown_revision = None\n',
            "0002_b.py": 'revision: str = "0002_b"\ndown_revision: str | None = "0001"\n',
            "0003_c.py": 'revision = "0003"\ndown_revision = "0002_b"\nx = compute()\n',
        },
    )
    assert head_of(versions) == "0003"


def test_a_merge_revision_ends_a_branch(tmp_path: Path) -> None:
    versions = _scripts(
        tmp_path,
        {
            "0001.py": 'revision = "0001"\ndown_revision = None\n',
            "0002a.py": 'revision = "0002a"\ndown_revision = "0001"\n',
            "0002b.py": 'revision = "0002b"\ndown_revision = "0001"\n',
            "0003.py": 'revision = "0003"\ndown_revision = ("0002a", "0002b")\n',
        },
    )
    assert head_of(versions) == "0003"


@pytest.mark.parametrize(
    "scripts",
    [
        {  # two heads (branches not merged yet)
            "0001.py": 'revision = "0001"\ndown_revision = None\n',
            "0002a.py": 'revision = "0002a"\ndown_revision = "0001"\n',
            "0002b.py": 'revision = "0002b"\ndown_revision = "0001"\n',
        },
        {"0002.py": 'revision = "0002"\ndown_revision = "0001"\n'},  # its parent is missing
        {"0001.py": "revision = make_id()\ndown_revision = None\n"},  # not a literal
        {"0001.py": "down_revision = None\n"},  # no revision at all
        {  # one id twice
            "0001.py": 'revision = "0001"\ndown_revision = None\n',
            "0001_again.py": 'revision = "0001"\ndown_revision = None\n',
        },
    ],
    ids=["branches", "missing-parent", "computed-id", "no-id", "duplicate-id"],
)
def test_scripts_without_one_head_leave_the_decision_to_alembic(
    tmp_path: Path, scripts: dict[str, str]
) -> None:
    assert head_of(_scripts(tmp_path, scripts)) is None


def test_a_store_behind_head_is_still_upgraded(database_url: str) -> None:
    """A database at an older revision is not taken for one at head: migrate() upgrades it."""
    db = Database(create_store_engine(database_url))
    try:
        upgrade(db, "0014_ssh_direct_ports")
        assert not at_head(db)
        Store(db).migrate()
        assert at_head(db)
        assert db.run_read(stored_revisions) == (head_revision(),)
        tables = db.run_read(lambda conn: set(inspect(conn).get_table_names()))
        assert set(metadata.tables) <= tables
    finally:
        db.dispose()


def test_an_empty_database_is_not_at_head(database_url: str) -> None:
    db = Database(create_store_engine(database_url))
    try:
        assert db.run_read(stored_revisions) == ()
        assert not at_head(db)
    finally:
        db.dispose()


def test_an_unknown_revision_still_reaches_alembic_and_its_refusal(
    at_unknown_revision: str,
) -> None:
    """A revision this vpod does not ship is not at head; Alembic refuses it as before."""
    db = Database(create_store_engine(at_unknown_revision))
    try:
        assert db.run_read(stored_revisions) == ("f00dfeed",)
        assert not at_head(db)
    finally:
        db.dispose()


_START_AT_HEAD = """
import sys
from vpod.store import Store
with Store.open(sys.argv[1]) as store:
    store.migrate()
    print(sorted(m for m in sys.modules if m == "alembic" or m.startswith("alembic.")))
"""


def test_migrating_a_store_at_head_does_not_load_alembic(database_url: str) -> None:
    """What a server's start-up pays: a store at head is checked without importing Alembic,
    and one that is not yet migrated is still migrated: on PostgreSQL by Alembic, on SQLite
    from the schema at head (``fresh_sqlite.sql``), without it."""

    def alembic_modules_after_migrate() -> str:
        return subprocess.run(
            [sys.executable, "-c", _START_AT_HEAD, database_url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    created_by_alembic = alembic_modules_after_migrate() != "[]"
    assert created_by_alembic == database_url.startswith("postgresql")
    with Store.open(database_url) as store:
        assert store.schema_revision() == head_revision()
    assert alembic_modules_after_migrate() == "[]"
