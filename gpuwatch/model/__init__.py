"""gpuwatch's data model: frozen samples, one type per collector, frames and verdicts."""

from gpuwatch.model.disk import BlockDevice, DataLocation, DiskSample
from gpuwatch.model.frame import Frame, TargetInfo
from gpuwatch.model.gpu import GpmMetrics, GpuProcess, GpuSample
from gpuwatch.model.host import CgroupCpu, HostSample, OtherProc, Psi
from gpuwatch.model.pcie import PcieSample
from gpuwatch.model.procs import ProcInfo, ProcsSample, ThreadCpu
from gpuwatch.model.stacks import DumpResult, StackSample, ThreadStack
from gpuwatch.model.values import PENDING, Maybe, Unsupported, known, value_or
from gpuwatch.model.verdict import Evidence, Stall, Verdict

__all__ = [
    "BlockDevice", "CgroupCpu", "DataLocation", "DiskSample", "DumpResult", "Evidence", "Frame",
    "GpmMetrics", "GpuProcess", "GpuSample", "HostSample", "Maybe", "OtherProc", "PENDING",
    "PcieSample", "ProcInfo", "ProcsSample", "Psi", "StackSample", "Stall", "TargetInfo",
    "ThreadCpu", "ThreadStack", "Unsupported", "Verdict", "known", "value_or",
]
