"""task_shape (numerics.dynamics.query_copies): the numbers of a task of the query-copies shape, read from task
files that differ from it in one way each, with the numbers counted by hand from the file."""
import pytest

from numerics.dynamics import task_shape

QC = ('name = "NAME"\ndescription = "query-copies as a file"\nquery = "q"\nquery_in_context = true\n'
      'relevant = RELEVANT\nSCORE[parameters]\ns = 2\nR = 5\n'
      '[[groups]]\nname = "q"\nper_class = true\nmultiplicity = "s - 1"\n'
      '[[groups]]\nname = "r"\nper_class = true\ntypes = "R"\nmultiplicity = "m / R"\nOTHER'
      '[[groups]]\nname = "z"\nper_class = false\nembedded = false\nmultiplicity = "n"\nEXTRA')


def shape_of(tmp_path, name, relevant='["r"]', score="", other="", extra=""):
    text = QC.replace("NAME", name).replace("RELEVANT", relevant).replace("SCORE", score)
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace("OTHER", other).replace("EXTRA", extra))
    return task_shape(str(path), m=5, n=10, M=4, b=2)


def test_the_zero_embedded_groups_add_up(tmp_path):
    assert shape_of(tmp_path, "qc-plain") == {"s": 2.0, "m": 5.0, "n": 10.0, "R": 5.0, "M": 4.0, "b": 2.0}
    w = '[[groups]]\nname = "w"\nper_class = false\nembedded = false\nmultiplicity = "3"\n'
    assert shape_of(tmp_path, "qc-two-zero-groups", extra=w)["n"] == 10.0 + 3.0


@pytest.mark.parametrize("name, change, why", [
    ("qc-scaled", {"score": 'score_scale = "2"\n'}, "its scores are scaled"),
    ("qc-two-relevant", {"relevant": '["r", "u"]',
                         "extra": '[[groups]]\nname = "u"\nper_class = true\nmultiplicity = "1"\n'},
     "it has more than one relevant group"),
    ("qc-other-copies", {"other": 'other_multiplicity = "1"\n'}, "group 'r' has copies of other classes' tokens"),
    ("qc-relevant-not-embedded", {"other": 'embedded = false\n'}, "the relevant group 'r' is not embedded")])
def test_a_task_of_another_shape_is_refused_saying_why(tmp_path, name, change, why):
    with pytest.raises(ValueError, match=f"^task '{name}' is not of the query-copies shape: {why}$"):
        shape_of(tmp_path, name, **change)
