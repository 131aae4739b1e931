"""What the experiments' commands share (numerics/experiments/commands/common.py): reading their options alike."""


def test_the_commands_read_parameterizations_alike():
    """sweep, predict and boundary read --parameterizations through one parser: any case, each once."""
    from numerics.experiments.__main__ import build_parser
    from numerics.experiments.commands import boundary, predict, sweep
    from numerics.experiments.commands.common import parse_parameterizations
    assert parse_parameterizations("fafo,CACO,FAFO") == ["FAFO", "CACO"]
    base = {"sweep": ["--ratios", "1", "--seeds", "1", "--target-loss", "0.5", "--output", "o"], "predict": [],
            "boundary": []}
    for name in base:
        args = build_parser().parse_args([name, "--parameterizations", "caco,CACO", *base[name]])
        assert args.parameterizations == "caco,CACO"
    assert sweep._settings(build_parser().parse_args(["sweep", "--parameterizations", "caco,CACO",
                                                       *base["sweep"]]))["parameterizations"] == ["CACO"]
    assert predict._settings(build_parser().parse_args(["predict", "--parameterizations", "caco,CACO",
                                                         "--ratios", "1"]))[0]["parameterizations"] == ["CACO"]
    assert boundary._common(build_parser().parse_args(["boundary", "--parameterizations", "caco,CACO"]),
                            (0.1, 10.0))[0] == ["CACO"]
