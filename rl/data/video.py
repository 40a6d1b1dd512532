"""MP4 video through PyAV: a streaming encoder (many episodes per file) and a whole-file decoder.

Dataset streams are H.264 (``libx264``) in 4:4:4 chroma at a high quality (``crf`` 10) with a
keyframe every ``gop`` frames and no B-frames, so every frame's presentation time is
``i / fps`` and random access (as LeRobot's decoders do it) decodes at most ``gop`` frames.
Videos meant for people to watch (:func:`write_mp4`) use 4:2:0 chroma, which every player shows.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import numpy as np

from scenegen.errors import PackError

DATASET_CODEC = "libx264"
DATASET_PIX_FMT = "yuv444p"
DATASET_CRF = 10
DATASET_GOP = 2


class VideoEncoder:
    """Appends RGB frames to one mp4 file; :meth:`close` finishes it.

    Args:
        path: the file to write (its folder is created).
        fps: frames per second (frame ``i`` is shown at ``i / fps`` s).
        width, height: frame size (even sizes for ``yuv420p``).
        pix_fmt: ``yuv444p`` (dataset fidelity) or ``yuv420p`` (plays everywhere).
        crf: x264 quality (0 lossless in YUV, 23 x264's default).
        gop: frames between keyframes.

    """

    def __init__(self, path: str | os.PathLike, fps: float, width: int, height: int, *,
                 pix_fmt: str = DATASET_PIX_FMT, crf: int = DATASET_CRF, gop: int = DATASET_GOP) -> None:
        import av

        if pix_fmt == "yuv420p" and (width % 2 or height % 2):
            raise PackError(f"yuv420p video needs even sizes, got {width}x{height}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.frames = 0
        self.fps = fps
        rate = Fraction(fps).limit_denominator(1000)
        self._container = av.open(str(self.path), mode="w", format="mp4")
        self._stream = self._container.add_stream(DATASET_CODEC, rate=rate)
        self._stream.width, self._stream.height = int(width), int(height)
        self._stream.pix_fmt = pix_fmt
        self._stream.time_base = Fraction(1, 1) / rate
        self._stream.options = {"crf": str(int(crf)), "g": str(int(gop)), "bf": "0", "preset": "medium"}
        self._stream.codec_context.max_b_frames = 0
        self._av = av

    def add(self, frame: np.ndarray) -> None:
        """Append one ``(H, W, 3)`` uint8 frame."""
        arr = np.ascontiguousarray(frame, dtype=np.uint8)
        if arr.shape != (self._stream.height, self._stream.width, 3):
            raise PackError(f"video frame of shape {arr.shape} does not match the stream's "
                            f"{(self._stream.height, self._stream.width, 3)}")
        vf = self._av.VideoFrame.from_ndarray(arr, format="rgb24")
        vf.pts = self.frames
        for packet in self._stream.encode(vf):
            self._container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        """Flush the encoder and finish the file."""
        if self._container is None:
            return
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()
        self._container = None


def decode_video(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of an mp4 as ``(T, H, W, 3)`` uint8, and their presentation times (s).

    Raises:
        PackError: the file is missing or cannot be decoded.

    """
    import av

    path = Path(path)
    if not path.is_file():
        raise PackError(f"video {path} is missing; record the dataset again")
    frames, times = [], []
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            for frame in container.decode(stream):
                if frame.pts is None:
                    continue
                frames.append(frame.to_ndarray(format="rgb24"))
                times.append(float(frame.pts * stream.time_base))
    except av.error.FFmpegError as exc:
        raise PackError(f"video {path} cannot be decoded ({exc}); record the dataset again") from None
    if not frames:
        raise PackError(f"video {path} holds no frame; record the dataset again")
    order = np.argsort(times)
    return np.stack(frames)[order], np.asarray(times)[order]


def video_info(path: str | os.PathLike) -> dict:
    """The ``info`` entry of a video feature (codec, size, pixel format, fps), probed from the file."""
    import av

    with av.open(str(path)) as container:
        s = container.streams.video[0]
        return {"video.height": s.height, "video.width": s.width, "video.codec": s.codec_context.name,
                "video.pix_fmt": s.pix_fmt, "video.is_depth_map": False,
                "video.fps": int(round(float(s.average_rate or s.base_rate))), "video.channels": 3,
                "has_audio": len(container.streams.audio) > 0}


def write_mp4(path: str | os.PathLike, frames: list[np.ndarray] | np.ndarray, fps: float) -> Path:
    """Write frames ``(H, W, 3)`` uint8 as a watchable mp4 (4:2:0, crf 20); odd sizes are padded by a pixel."""
    frames = [np.asarray(f, dtype=np.uint8) for f in frames]
    if not frames:
        raise PackError(f"no frames to write to {path}")
    h, w = frames[0].shape[:2]
    ph, pw = h % 2, w % 2
    enc = VideoEncoder(path, fps, w + pw, h + ph, pix_fmt="yuv420p", crf=20, gop=12)
    try:
        for f in frames:
            enc.add(np.pad(f, ((0, ph), (0, pw), (0, 0)), mode="edge") if ph or pw else f)
    finally:
        enc.close()
    return enc.path
