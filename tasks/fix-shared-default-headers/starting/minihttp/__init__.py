from minihttp.request import Request

__all__ = ["Request"]
