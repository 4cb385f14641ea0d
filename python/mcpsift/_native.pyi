"""Type stubs of the Rust extension; the documented API is in ``mcpsift``."""

from os import PathLike
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

__version__: str

class Options:
    """Validated options: retry windows, caps, filters, redaction."""

    def __init__(
        self,
        *,
        redact: bool = True,
        threads: int = 0,
        tool: Sequence[str] = ...,
        outcome: Sequence[str] = ...,
        finding: Sequence[str] = ...,
        scope: Sequence[str] = ...,
        max_record_bytes: Optional[int] = None,
        max_event_bytes: Optional[int] = None,
        max_stream_events: Optional[int] = None,
        max_decompressed_bytes: Optional[int] = None,
        retry_window: Optional[str] = None,
        double_dispatch_window: Optional[str] = None,
        client_timeout: Optional[str] = None,
        client_log_retry_window: Optional[str] = None,
    ) -> None: ...

class Records(Iterator[Dict[str, Any]]):
    def __iter__(self) -> "Records": ...
    def __next__(self) -> Dict[str, Any]: ...
    def __len__(self) -> int: ...

def analyze_paths(paths: Sequence[Union[str, "PathLike[str]"]], options: Options) -> Records: ...
def analyze_bytes(inputs: Sequence[Tuple[str, bytes]], options: Options) -> Records: ...
def parse_duration(text: str) -> Optional[int]: ...
def stage_calls(
    name: str, data: bytes, options: Options, group: Optional[str] = None, walked: bool = False
) -> List[Dict[str, Any]]: ...
def stage_correlate(records: Sequence[str], options: Options) -> Records: ...
def partition_key(group: str) -> str: ...
def summarize(records: Sequence[Union[str, Dict[str, Any]]]) -> Dict[str, Any]: ...
