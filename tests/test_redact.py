"""Secrets in command lines are masked before they are shown, recorded or reported.

The tokens below are made-up strings of the right shape, not real credentials.
"""

from __future__ import annotations

import shlex

import pytest

from gpuwatch.redact import MASK, redact_arg, redact_cmdline

HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
OPENAI = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"  # the example key ID from AWS's own documentation
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize(("argv", "secret", "kept"), [
    (["train.py", "--password", "hunter2"], "hunter2", "--password"),
    (["train.py", "--api-key=abc123"], "abc123", "--api-key="),
    (["train.py", "--hf_token", "abc123"], "abc123", "--hf_token"),
    (["env", "TOKEN=abc123", "python", "train.py"], "abc123", "TOKEN="),
    (["env", "DB_PASSWORD=abc123", "python"], "abc123", "DB_PASSWORD="),
    (["train.py", "--wandb-key", "abc123"], "abc123", "--wandb-key"),
    (["git", "clone", "https://user:pw@example.com/repo"], "pw", "https://***@example.com/repo"),
    (["train.py", "--data", "https://bob:s3cr3t@host:8080/x"], "s3cr3t", "@host:8080/x"),
    (["train.py", "--url=https://h.example/x?token=abc123&n=1"], "abc123", "&n=1"),
    (["curl", "-H", "Authorization: Bearer abcdef123456"], "abcdef123456", "Authorization: Bearer"),
    (["train.py", "--model", f"user/{HF}"], HF, "--model"),
    (["train.py", f"--hub={HF}"], HF, "--hub="),
    (["train.py", "--openai", OPENAI], OPENAI, "--openai"),
    (["train.py", f"s3://{AWS}@bucket"], AWS, "@bucket"),
    (["train.py", f"--push={GITHUB}"], GITHUB, "--push="),
    (["bash", "-c", "export HF_TOKEN=abc123 && python train.py --lr 3e-4"], "abc123", "python train.py --lr 3e-4"),
])
def test_secret_is_masked_and_the_rest_kept(argv, secret, kept):
    out = redact_cmdline(argv)
    assert secret not in out, out
    assert MASK in out and kept in out, out


def test_ordinary_command_lines_are_unchanged():
    for argv in (
        ["python", "-m", "torch.distributed.run", "--nproc-per-node=8", "train.py", "--lr", "3e-4"],
        ["python", "train.py", "--max-tokens", "2048", "--data", "/data/imagenet", "--batch-size=256"],
        ["deepspeed", "train.py", "--deepspeed", "ds.json", "--tokenizer", "gpt2"],
        ["python", "train.py", "--output", "https://example.com/ckpt", "--task", "sk-learn"],
        ["env", "TOKENIZERS_PARALLELISM=false", "python", "train.py", "--passes", "3", "--author", "me"],
    ):
        out = redact_cmdline(argv)
        assert MASK not in out, out
        assert shlex.split(out) == argv


def test_a_secret_named_flag_without_a_value_does_not_hide_the_next_option():
    out = redact_cmdline(["train.py", "--use-auth-token", "--lr", "0.1"])
    assert shlex.split(out) == ["train.py", "--use-auth-token", "--lr", "0.1"]


def test_redact_arg_masks_token_shapes_anywhere():
    assert redact_arg(f"prefix-{HF}-suffix") == f"prefix-{MASK}-suffix"
    assert redact_arg("xoxb-1234567890-abcdef") == MASK
    assert redact_arg("plain/path/to/file.pt") == "plain/path/to/file.pt"


def test_the_process_tree_shows_redacted_command_lines():
    # The Target walks real processes and redacts every command line it keeps.
    import subprocess
    import sys
    import time

    from gpuwatch.collectors.target import Target

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "--api-key", "abc123xyz"])
    try:
        time.sleep(0.2)
        t = Target(proc.pid)
        assert "abc123xyz" not in t.cmdline() and "--api-key" in t.cmdline()
        assert all("abc123xyz" not in n.cmdline for n in t.tree().nodes)
    finally:
        proc.kill()
        proc.wait()
