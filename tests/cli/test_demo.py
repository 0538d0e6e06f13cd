"""`osmosis-compat demo`: every example agent completes a rollout with the expected reward."""

from osmosis_compat.cli.main import main


def test_demo_drives_all_three_examples(capsys):
    assert main(["demo", "--rows", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.count("status=COMPLETED reward=1.0") == 2
    assert out.count("status=success reward=1.0") == 4
    assert "6/6 demo rollouts completed with the expected reward." in out


def test_demo_prints_transcripts(capsys):
    assert main(["demo", "--rows", "1"]) == 0
    out = capsys.readouterr().out
    assert "-> add({" in out and "The answer is 42." in out


def test_demo_without_examples_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--examples", str(tmp_path)]) == 1
    assert "examples not found" in capsys.readouterr().err
