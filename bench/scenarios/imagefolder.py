"""ImageNet-style training with torchvision: ImageFolder of JPEGs, the reference transforms, ResNet-18.

The loop of torchvision's reference classification script (references/classification/train.py),
cut to what shapes the pipeline: ``datasets.ImageFolder`` over ``train/`` and ``val/`` folders of
JPEGs the scenario writes at start (500 x 375, an ImageNet-sized photo; see _tv.make_image_folder),
the reference presets (train: RandomResizedCrop(224) + RandomHorizontalFlip + PILToTensor +
ConvertImageDtype + Normalize; val: Resize(256) + CenterCrop(224) + the same), a DataLoader with
``pin_memory``, bf16 autocast, SGD, ``loss.item()`` every step (the reference's MetricLogger), and a
validation pass over ``val/`` after every epoch under ``torch.inference_mode``. The files sit in the
page cache once written, so no read touches the disk: the cost is decoding and augmenting.

Variants (``--workers``, ``--persistent``, ``--cheap``): the field job of issue 20 is many workers, short epochs,
``persistent_workers=False`` (workers are started again for every epoch and every validation pass,
so every epoch begins with a wait for the first batches); the fixes are persistent workers, for a job with few workers, more workers, and a cheaper transform
(``--cheap``: each JPEG decoded at half scale inside libjpeg, PIL's ``Image.draft``, the reduced-size
decode that fast ImageNet loaders use, then the same RandomResizedCrop(224) from the 250 x 188
image; the decode, most of a worker's time, does a quarter of the pixels). CUDA: ResNet-18, batch 256, 15 batches an epoch, 3 val
batches. One worker decodes and augments ~130 images/s on the H200's host (run 21: 2 workers fed
261 images/s while the main thread waited 74 % of the time), so 14 workers feed at most ~1,800
images/s while the H200 trains ResNet-18 at 12,400 images/s (``--synthetic``, run 21): every
variant is input-bound by construction (``decode``), and ``--synthetic`` (the same loop on batches already on the device,
no loader) measures what the GPU could do. CPU: a small CNN (ResNet-18 would be the limit on two
cores), batch 16, 6 batches an epoch, 2 val batches, 1 worker.

The job times itself: ``wait_share`` (share of the training time the main thread spent in the
loader's ``next``), ``epoch_start_wait_s`` (mean time from ``iter(loader)`` to the first batch),
``val_share`` (share of the time in validation passes). These are the ground truth the verdict's
facts can be checked against.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch
from torch.utils.data import DataLoader

from bench.scenarios._common import Meter, cpu_threads, model_bound, run_main, spare_one_core
from bench.scenarios._images import small_cnn
from bench.scenarios._tv import DataDir, import_torchvision, make_image_folder

STAGE = "decode"
DEVICES = ("cpu", "cuda")
CLASSES = 10
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
DATA_ENV = "GPUWATCH_BENCH_IMAGES"
"""A folder to keep the JPEG tree in and reuse (as ``--data-dir``): bench runs that start several
variants set it once."""
SIZES = {  # device -> batch, train batches an epoch, val batches
    "cuda": (256, 15, 3),
    "cpu": (16, 6, 2),
}


def add_arguments(p) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="DataLoader workers (default 14, at most all CPUs but one)")
    p.add_argument("--persistent", action="store_true", help="persistent_workers=True (the fix)")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--epoch-batches", type=int, default=None, help="train batches an epoch (sets the image count)")
    p.add_argument("--val-batches", type=int, default=None)
    p.add_argument("--synthetic", action="store_true",
                   help="no loader: the same loop on batches already on the device (what the GPU can do)")
    p.add_argument("--cheap", action="store_true",
                   help="cheaper transform (the fix): decode each JPEG at half scale (PIL draft mode)")
    p.add_argument("--data-dir", default=None, help="keep the JPEG tree here and reuse it (default: a temp dir)")
    p.add_argument("--loop-aug", action="store_true",
                   help="the workers crop and flip to uint8 only; the training loop applies ColorJitter and "
                        "Normalize to each sample itself, on the main thread (CPU prep in the loop)")


def half_scale_loader(path: str):
    """ImageFolder's loader with the JPEG decoded at half scale by libjpeg's DCT scaling (PIL draft
    mode: the decoder skips the detail, so it costs about a quarter of a full decode)."""
    from PIL import Image

    with open(path, "rb") as f:
        img = Image.open(f)
        img.draft("RGB", (img.width // 2, img.height // 2))
        return img.convert("RGB")


def loop_presets(tv):
    """(the workers' part, the loop's part) of ``--loop-aug``: the crop and flip stay in the Dataset,
    the colour jitter and normalisation move into the training loop, applied per sample on the CPU
    the way a "batch augmentation" written over a list of tensors runs them."""
    t = tv.transforms
    workers = t.Compose([t.RandomResizedCrop(224, interpolation=t.InterpolationMode.BILINEAR),
                         t.RandomHorizontalFlip(0.5), t.PILToTensor()])
    loop = t.Compose([t.ColorJitter(0.4, 0.4, 0.4), t.ConvertImageDtype(torch.float), t.Normalize(MEAN, STD)])
    return workers, loop


def presets(tv):
    t = tv.transforms
    norm = [t.PILToTensor(), t.ConvertImageDtype(torch.float), t.Normalize(MEAN, STD)]
    train = t.Compose([t.RandomResizedCrop(224, interpolation=t.InterpolationMode.BILINEAR),
                       t.RandomHorizontalFlip(0.5), *norm])
    val = t.Compose([t.Resize(256, interpolation=t.InterpolationMode.BILINEAR), t.CenterCrop(224), *norm])
    return train, val


class ImageFolderJob:
    name = "imagefolder"

    def __init__(self, args, device: str) -> None:
        tv = import_torchvision()
        self.device = device
        batch, epoch_batches, val_batches = SIZES[device]
        self.batch = args.batch or batch
        self.epoch_batches = args.epoch_batches or epoch_batches
        self.val_batches = args.val_batches if args.val_batches is not None else val_batches
        asked = args.workers if args.workers is not None else 14
        self.workers = max(0, min(asked, spare_one_core()))  # 14 on the H200's 16 CPUs, 1 on two cores
        self.persistent = bool(args.persistent) and self.workers > 0
        self.synthetic = bool(args.synthetic)
        self.cheap = bool(getattr(args, "cheap", False))
        self.data = DataDir(args.data_dir or os.environ.get(DATA_ENV) or None, "gpuwatch-imagefolder-")
        t0 = time.time()
        info = make_image_folder(self.data.path, self.batch * self.epoch_batches, self.batch * self.val_batches, CLASSES)
        train_tf, val_tf = presets(tv)
        self.loop_tf = None
        if getattr(args, "loop_aug", False):
            train_tf, self.loop_tf = loop_presets(tv)
        loader = {"loader": half_scale_loader} if self.cheap else {}
        self.train_set = tv.datasets.ImageFolder(os.path.join(self.data.path, "train"), train_tf, **loader)
        self.val_set = tv.datasets.ImageFolder(os.path.join(self.data.path, "val"), val_tf)
        if device == "cuda":
            self.model = tv.models.resnet18(num_classes=CLASSES).to(device, memory_format=torch.channels_last)
        else:
            self.model = small_cnn(CLASSES).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        self.facts = {
            "workers": self.workers, "persistent_workers": self.persistent, "batch": self.batch,
            "epoch_batches": self.epoch_batches, "val_batches": self.val_batches, "synthetic": self.synthetic,
            "cheap_decode": self.cheap, "loop_aug": self.loop_tf is not None,
            "model": "resnet18" if device == "cuda" else "small_cnn", "images": len(self.train_set),
            "val_images": len(self.val_set), "jpeg_bytes": info["bytes"], "torchvision": tv.__version__,
            "setup_s": round(time.time() - t0, 1),
        }
        self.result: dict = {}

    def _loader(self, dataset, shuffle: bool) -> DataLoader:
        return DataLoader(dataset, batch_size=self.batch, shuffle=shuffle, num_workers=self.workers,
                          pin_memory=self.device == "cuda", drop_last=shuffle,
                          persistent_workers=self.persistent)

    def _step(self, x, y) -> None:
        x = x.to(self.device, non_blocking=True).contiguous(memory_format=torch.channels_last)
        y = y.to(self.device, non_blocking=True)
        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.device == "cuda"):
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        loss.item()

    def run(self, until: float, meter: Meter) -> None:
        if self.synthetic:
            return self._run_synthetic(until, meter)
        train, val = self._loader(self.train_set, True), self._loader(self.val_set, False)
        waited = starts = in_val = in_loop = 0.0
        epochs = val_passes = 0
        t_start = time.perf_counter()
        with cpu_threads(self.device):
            while time.time() < until:
                self.model.train()
                t0 = time.perf_counter()
                it = iter(train)
                first = True
                while True:
                    t = time.perf_counter()
                    try:
                        x, y = next(it)
                    except StopIteration:
                        break
                    dt = time.perf_counter() - t
                    waited += dt
                    if first:
                        starts += time.perf_counter() - t0
                        first = False
                    if self.loop_tf is not None:
                        t = time.perf_counter()
                        x = torch.stack([self.loop_tf(sample) for sample in x])
                        in_loop += time.perf_counter() - t
                    self._step(x, y)
                    meter.step()
                    if time.time() >= until:
                        break
                del it
                epochs += 1
                if time.time() >= until or not self.val_batches:
                    continue
                t = time.perf_counter()
                self._validate(val)
                in_val += time.perf_counter() - t
                val_passes += 1
        total = max(1e-9, time.perf_counter() - t_start)
        self.result = {
            "steps_per_s": round(meter.steps / total, 3), "epochs": epochs, "val_passes": val_passes,
            "wait_share": round(waited / total, 3), "epoch_start_wait_s": round(starts / max(1, epochs), 3),
            "val_share": round(in_val / total, 3), "loop_aug_share": round(in_loop / total, 3),
            "train_s": round(total, 1),
            "data_dir": self.data.path, "data_kept": self.data.keep,
        }

    def _validate(self, loader: DataLoader) -> None:
        self.model.eval()
        with torch.inference_mode(), torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.device == "cuda"):
            for x, y in loader:
                x = x.to(self.device, non_blocking=True).contiguous(memory_format=torch.channels_last)
                self.model(x).argmax(1).eq(y.to(self.device)).sum().item()

    def _run_synthetic(self, until: float, meter: Meter) -> None:
        gen = torch.Generator(device="cpu").manual_seed(0)
        xs = [torch.randn(self.batch, 3, 224, 224, generator=gen).to(self.device) for _ in range(4)]
        ys = [torch.randint(0, CLASSES, (self.batch,), generator=gen).to(self.device) for _ in range(4)]
        t_start = time.perf_counter()
        with cpu_threads(self.device):
            self.model.train()
            while time.time() < until:
                i = meter.steps % len(xs)
                self._step(xs[i], ys[i])
                meter.step()
        total = max(1e-9, time.perf_counter() - t_start)
        self.result = {"steps_per_s": round(meter.steps / total, 3), "train_s": round(total, 1)}

    def close(self) -> None:
        self.data.close()


def build(args, device: str) -> ImageFolderJob:
    return ImageFolderJob(args, device)


def truth_for(args, device: str) -> str:
    """``--synthetic`` has no input to wait for: the model is the limit."""
    return model_bound(device) if args.synthetic else STAGE


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
