"""The one bounded reader of files read as data (derivations.core.atomic_file.read_bounded), and the name of
the atomic writer's temporary files (is_temporary, temporary_name_length)."""
import os

import pytest

from derivations.core.atomic_file import atomic_write, is_temporary, read_bounded, temporary_name_length


@pytest.mark.parametrize("name", ["results.csv", "sweep-settings.json", "a", "x.tmp", "fig2_CACO.png", ".hidden",
                                  "two words.md", "ünïcode.json", "y" * 200])
def test_every_temporary_name_the_atomic_writer_makes_is_its_own_and_a_users_tmp_file_is_not(name, tmp_path):
    made = []

    def write(fh):                              # the temporary file is the one beside the file written
        made.extend(entry for entry in os.listdir(tmp_path) if entry != name)
    for _ in range(40):                         # the random part: every name it draws
        atomic_write(tmp_path / name, write)
    assert len(set(made)) == 40
    for temporary in made:
        assert is_temporary(temporary) and is_temporary(tmp_path / temporary, {name, "other"}), temporary
        assert not is_temporary(temporary, {"other", name + "x"}), temporary
        assert len(os.fsencode(temporary)) == temporary_name_length(name)
    for users in (".draft.tmp", "draft.tmp", ".tmp", "..tmp", f".{name}..tmp", f".{name}.ABCDEFGH.tmp",
                  f".{name}.abc-defg.tmp", f".{name}.abcdefgh.tmp.bak"):
        assert not is_temporary(users) and not is_temporary(users, {name}), users
    assert not is_temporary(f"{name}.abcdefgh.tmp", {name})          # (not hidden: not the writer's)


def test_a_link_is_read_through_or_refused_as_asked(tmp_path):
    target = tmp_path / "data.json"
    target.write_bytes(b"{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_bounded(link, 10) == b"{}"
    with pytest.raises(OSError):
        read_bounded(link, 10, follow_links=False)
    assert read_bounded(target, 10, follow_links=False) == b"{}"


def test_a_fifo_is_refused_at_once_and_a_large_file_by_its_size(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_bounded(fifo, 10)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    with pytest.raises(ValueError, match="^larger than 10 bytes$"):
        read_bounded(big, 10)


def test_a_huge_file_is_refused_by_its_size_before_it_is_read(tmp_path):
    import tracemalloc
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 30)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="^larger than 67108864 bytes$"):
            read_bounded(sparse, 64 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak          # not the 64 MiB it would take to read up to the limit


def test_a_file_of_exactly_the_limit_is_read_whole(tmp_path):
    """``limit`` is the largest size accepted: a file of ``limit`` bytes is read (by path and through an
    ``importlib.resources``-like ``open``), one of ``limit + 1`` refused."""
    exact = tmp_path / "exact"
    exact.write_bytes(b"0123456789")

    class Resource:                                 # not a file system path: read through its open
        def __init__(self, path):
            self.path = path

        def open(self, mode):
            return open(self.path, mode)
    assert read_bounded(exact, 10) == b"0123456789" == read_bounded(Resource(exact), 10)
    with pytest.raises(ValueError, match="^larger than 9 bytes$"):
        read_bounded(exact, 9)
    with pytest.raises(ValueError, match="^larger than 9 bytes$"):
        read_bounded(Resource(exact), 9)


def test_an_interruption_right_after_the_temporary_file_is_made_leaves_nothing(tmp_path, monkeypatch):
    """The temporary file's name is known before the file exists: a Ctrl-C (or a SIGTERM turned into an
    exception) arriving the moment the file has been made removes it, and ``path`` is not written."""
    real_open = os.open

    def interrupted(*args, **kwargs):
        os.close(real_open(*args, **kwargs))
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "open", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "results.csv", lambda fh: fh.write("a,b\n"))
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_a_name_in_use_is_skipped_and_never_removed(tmp_path, monkeypatch):
    from derivations.core import atomic_file
    taken = tmp_path / ".results.csv.aaaaaaaa.tmp"
    taken.write_text("another writer's")
    draws = iter(["aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr(atomic_file, "_random_part", lambda: next(draws))
    atomic_write(tmp_path / "results.csv", lambda fh: fh.write("a,b\n"))
    assert (tmp_path / "results.csv").read_text() == "a,b\n" and taken.read_text() == "another writer's"
    assert sorted(os.listdir(tmp_path)) == [".results.csv.aaaaaaaa.tmp", "results.csv"]
    monkeypatch.setattr(atomic_file, "_random_part", lambda: "aaaaaaaa")   # every name taken: refused
    with pytest.raises(FileExistsError, match="no free temporary name in 100 attempts"):
        atomic_write(tmp_path / "results.csv", lambda fh: fh.write("c,d\n"))
    assert (tmp_path / "results.csv").read_text() == "a,b\n" and taken.read_text() == "another writer's"
