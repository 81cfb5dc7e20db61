"""torch.utils._pytree: nested containers ("pytrees") flattened to a list of leaves and a
TreeSpec that rebuilds them, as libraries written for PyTorch use it (x-transformers,
einops helpers):

    leaves, spec = tree_flatten({"a": [x, y], "b": (z,)})   # [x, y, z]
    tree_unflatten([2 * l for l in leaves], spec)           # {"a": [2x, 2y], "b": (2z,)}
    tree_map(lambda t: t.float(), batch)

Containers: tuple, list, dict (insertion order), OrderedDict, namedtuple, and the types given
to register_pytree_node; everything else (None, numbers, tensors) is a leaf, as PyTorch's.
"""
from collections import OrderedDict, namedtuple

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_", "tree_map_only", "tree_iter", "tree_is_leaf", "tree_all",
           "tree_any", "is_namedtuple"]

class _NodeDef(namedtuple("_NodeDef", ["flatten", "unflatten"])):
    """A container type's functions; also under PyTorch's field names (flatten_fn, unflatten_fn)."""
    __slots__ = ()
    flatten_fn = property(lambda self: self.flatten)
    unflatten_fn = property(lambda self: self.unflatten)


PyTree = object  # (PyTorch's type alias: any nested container)
SUPPORTED_NODES = {}  # type -> _NodeDef(flatten(x) -> (children, context), unflatten(children, context) -> x)


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Makes `cls` a container: flatten_fn(x) -> (children, context) and
    unflatten_fn(children, context) -> x. Raises ValueError when cls is registered already."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = _NodeDef(flatten_fn, unflatten_fn)


def is_namedtuple(obj):
    cls = obj if isinstance(obj, type) else type(obj)
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and isinstance(cls._fields, tuple)


class MappingKey(namedtuple("MappingKey", ["key"])):
    """The path entry of a dict value (tree_flatten_with_path's keys; flatten_with_keys_fn)."""

    def __str__(self):
        return f"[{self.key!r}]"


class SequenceKey(namedtuple("SequenceKey", ["idx"])):
    def __str__(self):
        return f"[{self.idx!r}]"


def _dict_flatten(d):
    return list(d.values()), list(d)


def _dict_flatten_with_keys(d):
    """((MappingKey(key), value) pairs, keys) of a dict, as PyTorch's private helper that
    libraries pass to register_pytree_node(flatten_with_keys_fn=...)."""
    values, keys = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(keys, values)], keys


register_pytree_node(tuple, lambda t: (list(t), None), lambda children, _: tuple(children))
register_pytree_node(list, lambda t: (list(t), None), lambda children, _: list(children))
register_pytree_node(dict, _dict_flatten, lambda children, keys: dict(zip(keys, children)))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), list(d)),
                     lambda children, keys: OrderedDict(zip(keys, children)))
# every namedtuple class (the node type _get_node_type gives them), as PyTorch's table holds it
SUPPORTED_NODES[namedtuple] = _NodeDef(lambda t: (list(t), type(t)), lambda children, cls: cls(*children))


def _get_node_type(tree):
    """The registered kind of `tree` (namedtuple for one), or None for a leaf: PyTorch's
    private helper libraries call."""
    return _node_type(tree)


def _node_type(tree):
    """The registered kind of `tree` ("namedtuple" for one), or None for a leaf."""
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls
    if is_namedtuple(cls):
        return namedtuple
    return None


class TreeSpec:
    """How a pytree is built: its node type, the context that type's flatten gave (dict keys, a
    namedtuple's class) and one TreeSpec per child. num_leaves counts the leaves under it."""

    def __init__(self, type, context, children_specs):
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)

    @property
    def num_children(self):
        return len(self.children_specs)

    def is_leaf(self):
        return False

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and type(self) is type(other) and self.type == other.type and
                self.context == other.context and self.children_specs == other.children_specs)

    def __hash__(self):
        return hash((self.type, repr(self.context), tuple(self.children_specs)))

    def __repr__(self):
        name = "namedtuple" if self.type is namedtuple else self.type.__name__
        children = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{children}])"


class LeafSpec(TreeSpec):
    """The spec of one leaf."""

    def __init__(self):
        super().__init__(None, None, [])
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __repr__(self):
        return "*"


def tree_is_leaf(tree, is_leaf=None):
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) is None


def tree_flatten(tree, is_leaf=None):
    """(leaves, spec): the leaves of `tree` left to right, and the TreeSpec that rebuilds it.
    is_leaf(x) -> True stops at x."""
    leaves = []

    def walk(node):
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return LeafSpec()
        kind = _node_type(node)
        if kind is namedtuple:
            children, context = list(node), type(node)
        else:
            children, context = SUPPORTED_NODES[kind].flatten(node)
        return TreeSpec(kind, context, [walk(c) for c in children])
    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """The pytree of `treespec`'s structure holding `leaves`. Raises ValueError when their
    number is not treespec.num_leaves."""
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")
    at = [0]

    def build(spec):
        if spec.is_leaf():
            at[0] += 1
            return leaves[at[0] - 1]
        children = [build(c) for c in spec.children_specs]
        if spec.type is namedtuple:
            return spec.context(*children)
        return SUPPORTED_NODES[spec.type].unflatten(children, spec.context)
    return build(treespec)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree, is_leaf=None):
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """`tree` with each leaf x replaced by func(x, *the leaves at the same place in rests)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r, is_leaf)[0] for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func, tree, *rests, is_leaf=None):
    """func on each leaf (for its side effects); returns tree."""
    leaves = tree_leaves(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _types(type_or_types):
    return type_or_types if isinstance(type_or_types, tuple) else (type_or_types,)


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """tree_map of func on the leaves that are instances of type_or_types; others unchanged."""
    types = _types(type_or_types)
    return tree_map(lambda x: func(x) if isinstance(x, types) else x, tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf))
