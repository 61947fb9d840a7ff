"""HDF5 files of the daemon's data directory, h5py-like, over the native commands of the
HSDS endpoint (h5domain ... h5put_value; protocol/PROTOCOL.md, "HSDS endpoint"): the files
are changed where they lie, each change atomic and durable.

    f = client.h5file("/runs/a.h5", "w")
    d = f.create_dataset("x", data=np.arange(10.0), chunks=(4,), maxshape=(None,))
    d[2:4] = [7, 8]
    d.resize((20,))
    f["x"].attrs["units"] = "m"
    f["x"][:5], list(f), f["x"].attrs["units"]
"""
import json

import numpy as np

_BASES = {"i": "H5T_STD_I", "u": "H5T_STD_U", "f": "H5T_IEEE_F"}


def type_json(dtype):
    """The HSDS type JSON of a numpy dtype (as h5py stores it)."""
    dtype = np.dtype(dtype)
    if dtype.names:
        return {"class": "H5T_COMPOUND", "fields": [
            {"name": n, "type": type_json(dtype.fields[n][0])} for n in dtype.names]}
    if dtype.kind == "b":
        return {"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
                "mapping": {"FALSE": 0, "TRUE": 1}}
    if dtype.kind in "iuf":
        order = "BE" if dtype.byteorder == ">" else "LE"
        cls = "H5T_FLOAT" if dtype.kind == "f" else "H5T_INTEGER"
        return {"class": cls, "base": f"{_BASES[dtype.kind]}{dtype.itemsize * 8}{order}"}
    if dtype.kind == "S":
        return {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": dtype.itemsize,
                "strPad": "H5T_STR_NULLPAD"}
    if dtype.kind in "UO":
        return {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE",
                "strPad": "H5T_STR_NULLTERM"}
    raise TypeError(f"no HDF5 type for {dtype}")


def dtype_of(type_json_):
    """The numpy dtype values of a type JSON are read as (little-endian; strings: object)."""
    t = type_json_ if isinstance(type_json_, dict) else {"base": type_json_}
    cls = t.get("class")
    if cls == "H5T_COMPOUND":
        return np.dtype([(f["name"], dtype_of(f["type"])) for f in t["fields"]])
    if cls == "H5T_ENUM":
        if t.get("mapping") == {"FALSE": 0, "TRUE": 1}:
            return np.dtype(bool)
        return dtype_of(t["base"])
    if cls == "H5T_STRING":
        return np.dtype(object) if t["length"] == "H5T_VARIABLE" else np.dtype(f"S{t['length']}")
    base = t["base"]
    kind = "f" if "IEEE_F" in base else "u" if "_U" in base else "i"
    bits = int("".join(c for c in base.split("_")[-1] if c.isdigit()))
    return np.dtype(f"<{kind}{bits // 8}")


def _select(key, shape):
    """h5py's key (ints, slices, lists) as the endpoint's select text, and the shape numpy
    gives the answer."""
    key = key if isinstance(key, tuple) else (key,)
    if key == (Ellipsis,) or key == ():
        key = ()
    items, out_shape = [], []
    for axis, n in enumerate(shape):
        k = key[axis] if axis < len(key) else slice(None)
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            items.append(f"{start}:{max(stop, start)}:{step}")
            out_shape.append(len(range(start, stop, step)))
        elif isinstance(k, (list, np.ndarray)):
            items.append("[" + ",".join(str(int(i) % n) for i in k) + "]")
            out_shape.append(len(k))
        else:
            i = int(k) % n if n else int(k)
            items.append(str(i))
    return "[" + ",".join(items) + "]", tuple(out_shape)


class _Node:
    def __init__(self, file, oid, name):
        self.file, self.id, self.name = file, oid, name

    def _call(self, cmd, **args):
        return self.file._request(cmd, id=self.id, **args)

    @property
    def attrs(self):
        return Attributes(self)


class Attributes:
    """An object's attributes, as h5py's AttributeManager."""

    def __init__(self, node):
        self._node = node

    def keys(self):
        return [a["name"] for a in self._node._call("h5attrs")["attributes"]]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __contains__(self, name):
        return name in self.keys()

    def __getitem__(self, name):
        a = self._node._call("h5attr", name=name)
        value = a.get("value")
        if isinstance(value, list):
            return np.array(value, dtype=dtype_of(a["type"]))
        return value

    def __setitem__(self, name, value):
        arr = np.asarray(value)
        if arr.dtype.kind == "U":
            arr = arr.astype(object)
        shape = list(arr.shape)
        self._node._call("h5put_attr", name=name, replace=True, body=json.dumps(
            {"type": type_json(arr.dtype), "shape": shape, "value": arr.tolist()}))

    def __delitem__(self, name):
        self._node._call("h5delete_attr", name=name)


class Dataset(_Node):
    """A dataset: shape, dtype, chunks, maxshape; values read and written by selection."""

    def __init__(self, file, oid, name, desc=None):
        super().__init__(file, oid, name)
        self._desc = desc

    def _describe(self):
        self._desc = self._call("h5get")
        return self._desc

    @property
    def shape(self):
        s = self._describe()["shape"]
        return tuple(s.get("dims", ())) if s["class"] != "H5S_NULL" else None

    @property
    def maxshape(self):
        s = self._describe()["shape"]
        dims = s.get("maxdims", s.get("dims", []))
        return tuple(None if m == 0 else m for m in dims)

    @property
    def dtype(self):
        return dtype_of(self._describe()["type"])

    @property
    def chunks(self):
        layout = self._describe()["layout"]
        return tuple(layout["dims"]) if "dims" in layout else None

    def __getitem__(self, key):
        desc = self._describe()
        dtype, shape = dtype_of(desc["type"]), self.shape
        if not shape:
            return np.array(self._call("h5value", json=True)["value"], dtype=dtype)[()]
        select, out_shape = _select(key, shape)
        if dtype.kind == "O":
            return np.array(self._call("h5value", select=select, json=True)["value"],
                            dtype=object).reshape(out_shape)
        raw = self._call("h5value", select=select)["value"]
        return np.frombuffer(raw, dtype=dtype).reshape(out_shape)

    def __setitem__(self, key, value):
        shape = self.shape
        args = {}
        if shape:
            args["select"], out_shape = _select(key, shape)
        arr = np.asarray(value)
        if arr.ndim == 0 and shape:
            args["element_count"] = True
        elif shape:
            arr = np.broadcast_to(arr, out_shape)
        self._call("h5put_value", body=json.dumps({"value": arr.tolist()}), **args)

    def resize(self, shape):
        self._call("h5put_shape", body=json.dumps({"shape": list(shape)}))


class Group(_Node):
    """A group: items by path, iteration over its link names, new groups and datasets."""

    def _link(self, name):
        return self._call("h5link", name=name)["link"]

    def _open(self, link, name):
        if link["class"] == "H5L_TYPE_SOFT":
            return self.file[link["h5path"]]
        if link["class"] != "H5L_TYPE_HARD":
            raise KeyError(f"{name}: an external link (never followed)")
        path = f"{self.name.rstrip('/')}/{name}"
        if link["collection"] == "groups":
            return Group(self.file, link["id"], path)
        return Dataset(self.file, link["id"], path)

    def __getitem__(self, path):
        node = self.file if path.startswith("/") else self
        for part in [p for p in path.split("/") if p]:
            try:
                node = node._open(node._link(part), part)
            except Exception as e:  # noqa: BLE001 - missing links are KeyError, as in h5py
                if getattr(e, "code", None) == "not_found":
                    raise KeyError(path) from None
                raise
        return node

    def keys(self):
        return [link["title"] for link in self._call("h5links")["links"]]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __contains__(self, path):
        try:
            self[path]
            return True
        except KeyError:
            return False

    def __delitem__(self, name):
        self._call("h5delete_link", name=name)

    def _parent_of(self, path):
        """The group that holds path's last part, intermediate groups made; and that part."""
        parts = [p for p in path.split("/") if p]
        node = self.file if path.startswith("/") else self
        for part in parts[:-1]:
            node = node[part] if part in node.keys() else node.create_group(part)
        return node, parts[-1]

    def create_group(self, path):
        parent, name = self._parent_of(path)
        g = self.file._request("h5post_group", body=json.dumps(
            {"link": {"id": parent.id, "name": name}}))
        return Group(self.file, g["id"], f"{parent.name.rstrip('/')}/{name}")

    def create_dataset(self, path, shape=None, dtype=None, data=None, chunks=None,
                       maxshape=None, compression=None, compression_opts=None, shuffle=False,
                       fillvalue=None):
        if data is not None:
            data = np.asarray(data, dtype=dtype)
            if data.dtype.kind == "U":
                data = data.astype(object)
            shape = data.shape if shape is None else shape
            dtype = data.dtype
        dtype = np.dtype(dtype or "f4")
        body = {"type": type_json(dtype), "shape": list(shape)}
        if maxshape is not None:
            body["maxdims"] = [0 if m is None else m for m in maxshape]
        props = {}
        if chunks:
            props["layout"] = {"class": "H5D_CHUNKED", "dims": list(chunks)}
        filters = [{"name": "shuffle"}] if shuffle else []
        if compression == "gzip":
            filters.append({"name": "gzip", "level": compression_opts or 4})
        elif compression:
            raise ValueError(f"compression {compression!r}: only gzip")
        if filters:
            props["filters"] = filters
        if fillvalue is not None:
            props["fillValue"] = np.asarray(fillvalue, dtype).tolist()
        if props:
            body["creationProperties"] = props
        parent, name = self._parent_of(path)
        created = self.file._request("h5post_dataset", body=json.dumps(body))
        d = Dataset(self.file, created["id"], f"{parent.name.rstrip('/')}/{name}")
        if data is not None and data.size:
            d._call("h5put_value", body=json.dumps({"value": data.tolist()}))
        parent._call("h5put_link", name=name, body=json.dumps({"id": created["id"]}))
        return d


class File(Group):
    """A file of the data directory (a domain: its path from there, starting with '/'),
    opened as h5py opens one: "r", "r+" (it must exist), "w" (made anew), "w-"/"x" (made,
    not there before), "a" (made when missing)."""

    def __init__(self, client, domain, mode="r"):
        self.client, self.domain, self.mode = client, domain, mode
        exists = True
        try:
            dom = self._request("h5domain")
        except Exception as e:  # noqa: BLE001 - only a missing file is looked at here
            if getattr(e, "code", None) != "not_found" or mode in ("r", "r+"):
                raise
            exists = False
        if exists and mode in ("w-", "x"):
            raise FileExistsError(domain)
        if exists and mode == "w":
            self._request("h5delete_domain")
            exists = False
        if not exists:
            dom = self._request("h5put_domain")
        super().__init__(self, dom["root"], "/")

    def _request(self, cmd, **args):
        return self.client.request(cmd, {"domain": self.domain, **args}).result

    def close(self):
        """Nothing to do: every change is already in the file."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
