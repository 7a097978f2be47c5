"""The bounds of a JSON document we write (docs/FORMAT.md, "JSON documents").

Every document the recording writes (the aggregate, the run info, the
placement and trace documents) goes through `bounded_json` first, so
that writing one costs the training loop milliseconds at most, whatever a
run holds, and no reader is ever handed an unbounded document.
"""

from tb_devicecost.format import metadata

# Documents are bounded (docs/FORMAT.md, "JSON documents"): a list keeps
# its newest MAX_DOCUMENT_ITEMS items, a string its first
# MAX_DOCUMENT_STRING characters, and a document whose JSON would still be
# longer than MAX_DOCUMENT_BYTES has its lists shortened (newest kept)
# until it fits.
# Writing one then costs the loop milliseconds at most.
MAX_DOCUMENT_ITEMS = 1000
MAX_DOCUMENT_STRING = 10_000
MAX_DOCUMENT_BYTES = 1 << 20


# The shortest JSON that can hold something over the bounds: a list of more
# than MAX_DOCUMENT_ITEMS items (each at least a digit and a separator) or a
# string of more than MAX_DOCUMENT_STRING characters.
_SHORTEST_OVER = min(2 * MAX_DOCUMENT_ITEMS + 1, MAX_DOCUMENT_STRING + 2)


def bounded_json(document):
    """`bounded_document(document)`, encoded as the writer writes it
    (`metadata.encode_json`). Most documents are about 1 kB, shorter than
    anything over the bounds: those are encoded once, and not walked."""
    encoded = metadata.encode_json(document)
    if len(encoded) < _SHORTEST_OVER:
        return encoded
    bounded = bounded_document(document)
    # Nothing cut: the encoding already made is the document's.
    return encoded if bounded is document else metadata.encode_json(bounded)


def bounded_document(document):
    """`document` within the bounds of docs/FORMAT.md (`MAX_DOCUMENT_*`).

    Lists keep their newest (last) `MAX_DOCUMENT_ITEMS` items, strings
    their first `MAX_DOCUMENT_STRING` characters; if the JSON would still
    exceed `MAX_DOCUMENT_BYTES`, every list is shortened by the share it is
    over (newest kept) until it does not. A document that was cut says so:
    `"truncated": true`. Returns `document` itself when nothing was cut.
    """
    cut = [False]

    def bound(value):
        if isinstance(value, dict):
            return {key: bound(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            if len(value) > MAX_DOCUMENT_ITEMS:
                cut[0] = True
                value = value[-MAX_DOCUMENT_ITEMS:]
            return [bound(item) for item in value]
        if isinstance(value, str) and len(value) > MAX_DOCUMENT_STRING:
            cut[0] = True
            return value[:MAX_DOCUMENT_STRING] + "…"
        return value

    bounded = bound(document)
    for _ in range(8):
        size = _json_size(bounded)
        if size <= MAX_DOCUMENT_BYTES:
            break
        # Every list shortened by the share the document is over (newest
        # kept): one or two rounds, each a single encoding.
        keep = 0.9 * MAX_DOCUMENT_BYTES / size
        lists = [items for items in _lists(bounded) if len(items) > 1]
        if not lists:
            break
        for items in lists:
            del items[: len(items) - max(1, int(len(items) * keep))]
        cut[0] = True
    else:
        size = _json_size(bounded)
    if size > MAX_DOCUMENT_BYTES:
        # Nothing left to shorten: what remains says only that it was cut.
        bounded = {key: bounded[key] for key in ("schema",) if key in bounded}
        cut[0] = True
    if not cut[0]:
        return document
    bounded["truncated"] = True
    return bounded


def _json_size(document):
    """Bytes of `document` as the writer encodes it (`metadata.encode_json`)."""
    return len(metadata.encode_json(document))


def _lists(value):
    """Every list inside a document, depth first."""
    stack, found = [value], []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            found.append(value)
            stack.extend(value)
    return found
