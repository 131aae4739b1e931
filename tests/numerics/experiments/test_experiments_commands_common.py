"""What the experiments' commands share (numerics/experiments/commands/common.py): reading their options alike."""
import pytest

SWEEP = ["--seeds", "1", "--target-loss", "0.5", "--output"]


def test_the_commands_read_parameterizations_alike():
    """sweep, predict and boundary read --parameterizations through one parser: any case, in order."""
    from numerics.experiments.__main__ import build_parser
    from numerics.experiments.commands import boundary, predict, sweep
    from numerics.experiments.commands.common import parse_parameterizations
    assert parse_parameterizations("fafo,CACO") == ["FAFO", "CACO"]
    args = build_parser().parse_args(["sweep", "--parameterizations", "caco,FAFO", "--ratios", "1", *SWEEP, "o"])
    assert sweep._settings(args)["parameterizations"] == ["CACO", "FAFO"]
    assert predict._settings(build_parser().parse_args(["predict", "--parameterizations", "caco",
                                                         "--ratios", "1"]))[0]["parameterizations"] == ["CACO"]
    assert boundary._common(build_parser().parse_args(["boundary", "--parameterizations", "caco"]),
                            (0.1, 10.0))[0] == ["CACO"]


@pytest.mark.parametrize("argv, twice", [
    (["sweep", "--parameterizations", "caco,CACO", "--ratios", "1", *SWEEP, "OUT"], "--parameterizations names CACO"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1,1.0", *SWEEP, "OUT"], "--ratios names 1.0"),
    (["predict", "--parameterizations", "FACO,faco"], "--parameterizations names faco"),
    (["predict", "--ratios", "2,2"], "--ratios names 2"),
    (["boundary", "--parameterizations", "CACO,CACO"], "--parameterizations names CACO"),
    (["boundary", "--target-loss", "0.2,0.2"], "--target-loss names 0.2"),
    (["fig3", "--alphas", "0.5,0.5"], "--alphas names 0.5"),
    (["fig2", "--seeds", "1,0-2"], "--seeds must be distinct: names 1"),
])
def test_a_list_option_refuses_an_item_given_twice(argv, twice, tmp_path, capsys):
    from numerics.experiments.__main__ import main
    assert main([a.replace("OUT", str(tmp_path / "out")) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{twice} twice" in err and not (tmp_path / "out").exists()


def test_an_error_line_has_one_prefix(tmp_path, capsys):
    """The program once (not argparse's ``python -m numerics.experiments fig2`` after it), a task file once."""
    from numerics.experiments.__main__ import main
    bad = tmp_path / "syntax.toml"
    bad.write_text("x = [\n")
    for argv, line in ((["fig2", "--dtype", "x"], "experiments: error: argument --dtype: invalid choice: 'x'"),
                       (["fig2", "--task", str(bad)], f"experiments: error: --task {bad}: not TOML"),
                       (["boundary", "--task", str(bad)], f"experiments: error: --task {bad}: not TOML")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(line) and err.count("\n") == 1 and err.count(str(bad)) <= 1, err


@pytest.mark.parametrize("argv, says", [
    (["predict", "--params", "m=\uff15"], "--params m must be a number in ASCII digits (as 5, 0.5, 1e-3); got '\uff15'"),
    (["predict", "--task", "shared-irrelevant", "--params", "n_c=1_0"], "--params n_c must be a number in ASCII"),
    (["fig2", "--seeds", "1,\uff12"], "--seeds must be comma-separated integers >= 0 (ranges a-b allowed); got '1,\uff12'"),
    (["fig2", "--seeds", "1-\uff12"], "--seeds must be comma-separated integers >= 0"),
    (["fig2", "--seeds", "1_0"], "--seeds must be comma-separated integers >= 0"),
    (["fig2", "--epochs", "1_0"], "--epochs must be an integer in [1, 1000000000] in ASCII digits; got '1_0'"),
])
def test_a_number_not_in_ascii_digits_is_refused(argv, says, capsys):
    """int() and float() read 1_0 as 10 and the full-width digits (U+FF15, U+FF12) as 5 and 2: one line, exit 2."""
    from numerics.experiments.__main__ import main
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
