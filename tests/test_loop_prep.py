"""Data prepared in the training loop itself (torchvision transforms, PIL, a tokenizer on the main
thread, outside any DataLoader fetch): labelled ``loop_prep``, and read by CPU prep as time the step
waits for, not as the model's compute.

The transform frames are those py-spy read from a real job (trial 30's ``mainaug``: torchvision 0.28
v2 ColorJitter applied to each sample in the loop, on a 2-core CPU host, 2026-12-07)."""

from __future__ import annotations

import pytest

from gpuwatch.collectors.pyspy import FrameRecord, ThreadRecord
from gpuwatch.collectors.stack_labels import classify
from gpuwatch.model import stacks as S

SITE = "/venv/lib/python3.12/site-packages/"


def fr(text: str) -> FrameRecord:
    """A frame from py-spy's text, "name (short/file.py:line)"; a file without a folder is the job's."""
    name, rest = text.rsplit(" (", 1)
    short, line = rest.rstrip(")").rsplit(":", 1)
    full = SITE + short if "/" in short else "/home/me/" + short
    return FrameRecord(name, full, short, int(line))


def main(*texts: str) -> tuple[str, str]:
    frames = tuple(fr(t) for t in texts)
    return classify(ThreadRecord(pid=1, tid=1, name="MainThread", active=True, owns_gil=False, frames=frames),
                    S.ROLE_MAIN_THREAD)


MAINAUG = ("_blend (torchvision/transforms/v2/functional/_color.py:96)",
           "adjust_saturation_image (torchvision/transforms/v2/functional/_color.py:166)",
           "Transform._call_kernel (torchvision/transforms/v2/_transform.py:49)",
           "ColorJitter.transform (torchvision/transforms/v2/_color.py:168)",
           "Transform.forward.<locals>.<listcomp> (torchvision/transforms/v2/_transform.py:69)",
           "Transform.forward (torchvision/transforms/v2/_transform.py:68)",
           "Module._call_impl (torch/nn/modules/module.py:1789)",
           "Module._wrapped_call_impl (torch/nn/modules/module.py:1778)",
           "Compose.forward (torchvision/transforms/v2/_container.py:52)",
           "Module._call_impl (torch/nn/modules/module.py:1789)",
           "Module._wrapped_call_impl (torch/nn/modules/module.py:1778)",
           "main.<locals>.<listcomp> (mainaug.py:39)",
           "main (mainaug.py:39)")


def test_torchvision_transforms_in_the_loop_are_preparing_data_not_running_ops():
    # The recorded label was "dispatch" ("running ops", detail Module._call_impl): the model's compute.
    assert main(*MAINAUG) == (S.LOOP_PREP, "torchvision transforms from main.<locals>.<listcomp> (mainaug.py:39)")


def test_torch_ops_a_transform_runs_stay_inside_it():
    # A resize runs torch.nn.functional.interpolate: a torch/nn frame, innermost, that alone reads as dispatch.
    assert main("interpolate (torch/nn/functional.py:4650)",
                "resize_image (torchvision/transforms/v2/functional/_geometry.py:250)",
                "Resize.transform (torchvision/transforms/v2/_geometry.py:190)",
                "augment (train.py:30)", "main (train.py:80)")[0] == S.LOOP_PREP


@pytest.mark.parametrize("texts,label", [
    # num_workers=0: the DataLoader's fetch holds the transform, so it is the inline load it always was.
    (("ImageFile.load (PIL/ImageFile.py:300)", "Dataset.__getitem__ (data.py:20)",
      "_MapDatasetFetcher.fetch (torch/utils/data/_utils/fetch.py:52)",
      "_SingleProcessDataLoaderIter._next_data (torch/utils/data/dataloader.py:789)", "main (train.py:80)"),
     S.INLINE_LOAD),
    # A tokenizer's BatchEncoding.to is the copy to the GPU, though its file is a tokenizer's.
    (("BatchEncoding.to (transformers/tokenization_utils_base.py:810)", "main (train.py:80)"), S.H2D),
    # A tokenizer called in the loop: preparing data.
    (("PreTrainedTokenizerFast._batch_encode_plus (transformers/tokenization_utils_fast.py:540)",
      "PreTrainedTokenizerBase.__call__ (transformers/tokenization_utils_base.py:2880)",
      "main (train.py:80)"), S.LOOP_PREP),
    # A normalisation inside a model's forward is the model's, on the GPU with it.
    (("normalize (torchvision/transforms/v2/functional/_misc.py:30)", "Net.forward (model.py:12)",
      "Module._call_impl (torch/nn/modules/module.py:1789)", "main (train.py:80)"), S.DISPATCH),
    # Lightning's after-transfer hook gets the batch on the device: GPU augmentation.
    (("ColorJitter.forward (torchvision/transforms/v2/_color.py:168)",
      "Module._call_impl (torch/nn/modules/module.py:1789)", "Model.on_after_batch_transfer (model.py:40)",
      "Strategy.batch_to_device (lightning/pytorch/strategies/strategy.py:270)", "main (train.py:80)"), S.DISPATCH),
    # A --native dump showing the transform launch kernels: it runs on the GPU.
    (("cudaLaunchKernel (libcudart.so.13:0)", "adjust_hue_image (torchvision/transforms/v2/functional/_color.py:300)",
      "main (train.py:80)"), S.DISPATCH),
    # Logging an image through TensorBoard, and a dataset tokenised once with datasets' map.
    (("Image.fromarray (PIL/Image.py:3100)", "make_image (torch/utils/tensorboard/summary.py:500)",
      "SummaryWriter.add_image (torch/utils/tensorboard/writer.py:600)", "main (train.py:80)"), S.DISPATCH),
    (("PreTrainedTokenizerBase.__call__ (transformers/tokenization_utils_base.py:2880)",
      "Dataset._map_single (datasets/arrow_dataset.py:3400)", "Dataset.map (datasets/arrow_dataset.py:3000)",
      "main (train.py:20)"), S.DISPATCH),
    # A tokenizers folder inside another package (sacrebleu's, for BLEU in an evaluation) is not a tokenizer library.
    (("TokenizerV14International.__call__ (sacrebleu/tokenizers/tokenizer_intl.py:50)", "bleu (eval.py:10)",
      "main (train.py:80)"), S.DISPATCH),
    # torchvision's detection models carry a transform of their own, run on the GPU as part of the model.
    (("GeneralizedRCNNTransform.forward (torchvision/models/detection/transform.py:140)",
      "Module._call_impl (torch/nn/modules/module.py:1789)", "main (train.py:80)"), S.DISPATCH),
])
def test_what_is_not_preparing_data_in_the_loop(texts, label):
    assert main(*texts)[0] == label


def test_saving_an_image_with_pil_is_output_not_preparation():
    label, _ = main("ImageFile._save (PIL/ImageFile.py:640)", "PngImagePlugin._save (PIL/PngImagePlugin.py:1400)",
                    "Image.save (PIL/Image.py:2560)", "log_samples (train.py:60)", "main (train.py:80)")
    assert label != S.LOOP_PREP


def test_a_real_loop_transforming_its_batches_is_cpu_prep_with_its_line_in_every_output():
    """tests/data/cpu_field/loop_aug.jsonl.gz: by its own clock the loop spent 63.6 % of the watched
    time in torchvision transforms and 24.1 % in forward and backward. The verdict is CPU prep, said as
    the loop's own transforms, with the job's line; its remedy moves them out of the loop; neither
    Launch nor CPU-bound (the model's compute) is named, and the report and its JSON say the same."""
    import json

    from gpuwatch.diagnosis.stages import CPU_COMPUTE
    from gpuwatch.model.verdict import DECODE, LAUNCH
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_json import render_json
    from gpuwatch.report.render_md import render_markdown

    path = "tests/data/cpu_field/loop_aug.jsonl.gz"
    gathered = from_frames(load_frames(path))
    named = [v for v in gathered.verdicts if v.stage != "unknown"]
    assert len(named) >= 40 and all(v.stage == DECODE for v in named), {v.stage for v in named}
    assert not any(v.stage in (CPU_COMPUTE, LAUNCH) for v in gathered.verdicts)
    for v in named:
        assert "preparing data in the training loop" in v.sentence and "mainaug.py:39" in v.sentence, v.sentence
        assert any(r.startswith("Move this preparation (transforms, decoding, tokenising) out of the training loop") for r in v.remedies), v.remedies
    report = build_report(gathered, NOT_RECORDED, "replay", path=path)
    md = render_markdown(report).split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "**CPU prep**" in md and "preparing data in the training loop" in md, md
    doc = json.loads(render_json(report))
    assert "preparing data in the training loop" in json.dumps(doc), "the JSON report tells another story"


def test_on_a_starved_gpu_the_loops_transforms_are_cpu_prep_and_its_remedies_move_them():
    """A GPU job (the H200 "starved" preset) whose main thread transforms batches 70 % of the time:
    before the label, those samples were running ops, which beside a starved GPU is Launch, whose
    remedies (CUDA graphs, compile) would not help. On a saturated GPU the loop's transforms are not
    what the GPU waits for, and CPU prep is not named."""
    from dataclasses import replace

    from gpuwatch.model import verdict as v
    from tests.test_diagnosis_frames import Knobs, last

    k = Knobs(gpu="starved", main_labels={S.LOOP_PREP: 0.7, S.DISPATCH: 0.3}, main_cpu=1.0, workers=4,
              worker_cpu=0.05, main_detail={S.LOOP_PREP: "torchvision transforms from main (train.py:40)"})
    verdict = last(k, 12)
    assert verdict.stage == v.DECODE, verdict.sentence
    assert verdict.sentence.startswith("Input-bound on preparing data in the training loop"), verdict.sentence
    assert "the GPU and the step wait" in verdict.sentence and "train.py:40" in verdict.sentence
    assert verdict.remedies[0].startswith("Move this preparation (transforms, decoding, tokenising) out of the training loop"), verdict.remedies
    assert "(4 of them)" in verdict.remedies[0]
    assert any(r.startswith("If they run on CPU tensors, they can also run on the GPU") for r in verdict.remedies), \
        verdict.remedies
    assert not any(r.startswith("persistent_workers") for r in verdict.remedies), verdict.remedies
    busy = last(replace(k, gpu="healthy"), 12)
    assert busy.stage != v.DECODE, busy.sentence
    # A loop blocked in PIL opening images from slow storage computes nothing: at 0.2 core, with no
    # thread queued for a CPU, its prep library samples are no CPU prep (review 35).
    blocked = last(replace(k, main_cpu=0.2), 12)
    assert blocked.stage != v.DECODE and v.DECODE not in blocked.secondary, blocked.sentence



def _on_line(code: str, active: bool = False) -> tuple[str, str]:
    """A main thread whose leaf is the job's own line ``code`` (as py-spy shows a native call)."""
    frames = (fr("encode (tok_loop.py:23)"), fr("main (tok_loop.py:60)"))
    thread = ThreadRecord(pid=1, tid=1, name="MainThread", active=active, owns_gil=False, frames=frames)
    return classify(thread, S.ROLE_MAIN_THREAD, source_line=lambda _file, _line: code)


def test_a_native_tokenizer_call_on_the_jobs_own_line_is_preparing_data():
    """tests/data/cpu_field/t31_tok_loop_q.jsonl.gz (trial 31): the loop tokenised with
    ``tok.encode_batch`` 60 % of the time by its clock; the Rust call leaves no Python frame, and the
    samples read "other work: encode (tok_loop.py:23)". The line's text names the tokenizer."""
    assert _on_line("    encs = tok.encode_batch(list(texts))") == (
        S.LOOP_PREP, "a tokenizer from encode (tok_loop.py:23)")
    assert _on_line("    ids = tokenizer.encode(text).ids", active=True)[0] == S.LOOP_PREP
    assert _on_line("    data = line.encode('utf-8')")[0] == S.OTHER  # str.encode is no tokenizer
    assert _on_line("    ids = self._tokenizer.encode(text)")[0] == S.LOOP_PREP
    for not_one in ("b = token.encode('utf-8')", "e = self.tok_emb.encode(x)", "e = encoder.encode_batch(wavs)",
                    "e = self.token_encoder.encode(x)"):
        assert _on_line(not_one)[0] == S.OTHER, not_one  # a string's or a model's encode (review 35)
    assert _on_line("    # tok.encode_batch(texts) was slow")[0] == S.OTHER  # a comment calls nothing


def test_a_loop_whose_tokenizer_works_on_its_own_thread_pool_is_cpu_prep():
    """tests/data/cpu_field/t31_tok_loop_wrap.jsonl.gz: the loop tokenised through
    ``tokenizers.implementations.BaseTokenizer`` 55 % of the time by its clock, on the tokenizer's
    thread pool: the main thread read 0.43-0.48 core with the process at 1.78. CPU prep asked it for
    half a core and stayed "ok" beside loop prep at 43-50 % of the samples; the job was called CPU-bound."""
    from gpuwatch.model.verdict import DECODE
    from gpuwatch.replay import load_frames
    from gpuwatch.report.gather import from_frames

    verdicts = from_frames(load_frames("tests/data/cpu_field/t31_tok_loop_wrap.jsonl.gz")).verdicts
    named = [v for v in verdicts if v.stage != "unknown"]
    assert sum(v.stage == DECODE for v in named) >= 0.8 * len(named), {v.stage for v in named}
    assert any("a tokenizer from encode (tok_loop.py:23)" in v.sentence for v in named)
