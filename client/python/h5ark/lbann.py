"""LBANN sample packing (`pack`): the packed groups and field map, and mini-batches."""
import math

import numpy as np

from . import codec
from .objects import make_object


class Packed:
    """What `pack` made: `samples` (int), `sample_ids` (Strings), `groups` ({group:
    ArrayView of [samples, width]}), `fields` ({field path: {"group", "offset", "length",
    "dims", "dtype"}}) and the reply's `warnings`."""

    def __init__(self, client, result, warnings_=()):
        self._client = client
        self.samples = int(result["samples"])
        self.sample_ids = make_object(client, result["sample_ids"])
        self.groups = {g: make_object(client, d) for g, d in result["groups"].items()}
        self.fields = dict(result["fields"])
        self.warnings = list(warnings_)

    def __repr__(self):
        return f"Packed(samples={self.samples}, groups={list(self.groups)})"

    def rows(self, rows, groups=None):
        """Those rows (any order, repeats allowed) of each group: {group: ndarray of
        [len(rows), width]}, one `get` per group."""
        rows = [int(r) for r in rows]
        out = {}
        for g in groups or self.groups:
            desc = self.groups[g].descriptor
            reply = self._client.get(desc["name"], rows=rows)
            data = codec.decode_pdarray(reply.result["object"], reply.buffers)
            out[g] = data.reshape(len(rows), desc["shape"][1])
        return out

    def field(self, batch, path):
        """A field's values in a batch (from rows() or batches()) as [rows, *dims]."""
        f = self.fields[path]
        part = batch[f["group"]][:, f["offset"]:f["offset"] + f["length"]]
        return part.reshape((part.shape[0], *f["dims"]))

    def batches(self, batch_size, shuffle=True, seed=None, drop_last=False, groups=None):
        """Mini-batches over every sample once: {group: ndarray [batch, width]} per batch,
        the samples in a random order (numpy's default_rng(seed)) or in order without
        shuffle; the last smaller batch is left out with drop_last."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        order = np.arange(self.samples)
        if shuffle:
            np.random.default_rng(seed).shuffle(order)
        stop = (self.samples // batch_size * batch_size) if drop_last else self.samples
        for start in range(0, stop, batch_size):
            yield self.rows(order[start:start + batch_size], groups)

    def __len__(self):
        return self.samples

    def nbatches(self, batch_size, drop_last=False):
        return self.samples // batch_size if drop_last else math.ceil(self.samples / batch_size)
