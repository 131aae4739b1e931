"""The one bounded reader of files read as data (derivations.core.atomic_file.read_bounded)."""
import os

import pytest

from derivations.core.atomic_file import read_bounded


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
