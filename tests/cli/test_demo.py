"""`osmosis-compat demo`: every example agent completes a rollout with the expected reward."""

from osmosis_compat.cli.main import main


def test_demo_drives_all_three_examples(capsys):
    assert main(["demo", "--rows", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.count("status=COMPLETED reward=1.0") == 2
    assert out.count("status=success reward=1.0") == 4
    # today's controller: the unchanged legacy loop and the two workflows written for 0.3, long-polled
    assert out.count("(polling) #") == 6 and out.count("→ success] reward=1.0") == 6
    assert "12/12 demo rollouts completed with the expected reward." in out


def test_demo_prints_transcripts(capsys):
    assert main(["demo", "--rows", "1"]) == 0
    out = capsys.readouterr().out
    assert "-> add({" in out and "The answer is 42." in out


def test_demo_without_examples_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--examples", str(tmp_path)]) == 1
    assert "examples not found" in capsys.readouterr().err
