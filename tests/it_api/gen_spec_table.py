#!/usr/bin/env python3
"""Writes it_api_spec_table.inc: the IT-API 2.1 facts the header checks assert, read
straight from the specification text rather than from include/it_api.h, so that
the checks are an independent second reading of the spec.

    python3 tests/it_api/gen_spec_table.py SEED \
        | clang-format --assume-filename=table.c > tests/it_api/it_api_spec_table.inc

SEED is the text of the specification the project works from
(/work/shared/specs/seeds/it-api-2.1.txt); line numbers below are its file lines.

Sources, by precedence: the synopses of the chapter 6 and 7 reference pages
(L2081-L16910), then Appendix G.1 (L19133-L21744) for what the pages do not show.
Where the appendix prints a name the pages spell otherwise, the page spelling is used
(docs/spec-deviations.md, "IT-API 2.1 headers").

Output, as macro calls the including file defines:
  IT_SA(cond)                          a static assertion
  IT_PROTO(name, ret, (params))        one per prototype (83)
  IT_MEMBER_TYPE(type, member, mtype)  the declared type of a structure member
  IT_BITFIELD(type, member, mtype, n)  a bit-field member: declared type and width
Members are also checked for their order (offsetof), character arrays for their size.
"""
import re
import sys

PAGES = (2081, 16910)
APPENDIX_G = (19133, 21744)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def code(lines, first, last):
    """The lines first..last without code fences, the spec's own margin numbers and
    comments."""
    out = []
    for line in lines[first - 1:last]:
        if line.startswith("```"):
            continue
        out.append(re.sub(r"^\s*\d{4,5}(\s+\d{4,5})*(\s|$)", "", line))
    return re.sub(r"/\*.*?\*/", "", "\n".join(out), flags=re.S)


def matching_brace(text, open_at):
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced braces")


def aggregates(text):
    """{typedef name: [(kind, body)]} for every typedef struct/union/enum {...} name;"""
    found = {}
    for m in re.finditer(r"typedef\s+(struct|union|enum)\s*\w*\s*\{", text):
        close = matching_brace(text, m.end() - 1)
        name = re.match(r"\s*(\w+)\s*;", text[close + 1:])
        if name:
            found.setdefault(name.group(1), []).append((m.group(1), text[m.end():close]))
    return found


class HexInt(int):
    """An enumerator value the spec writes in hexadecimal, printed the same way."""

    def __str__(self):
        return "0x%05x" % self if self > 0xFFF else "0x%x" % self


def enumerators(body):
    values, previous = [], -1
    for item in body.split(","):
        item = " ".join(item.split())
        if not item:
            continue
        m = re.fullmatch(r"(IT_\w+)(?:\s*=\s*(\w+))?", item)
        if not m:
            raise ValueError("enumerator " + item)
        if m.group(2) is None:
            value = previous + 1
        elif re.fullmatch(r"0x[0-9a-fA-F]+|\d+", m.group(2)):
            value = HexInt(m.group(2), 0) if m.group(2).startswith("0x") else int(m.group(2))
        else:
            value = dict(values)[m.group(2)]
        values.append((m.group(1), value))
        previous = value
    return values


def members(body):
    """Top-level members of a struct/union body: (declared type, name, bits, array)."""
    flat, i = "", 0
    while i < len(body):  # nested aggregates become one token
        if body[i] == "{":
            j = matching_brace(body, i)
            flat += " @NESTED@ "
            i = j + 1
        else:
            flat += body[i]
            i += 1
    result = []
    for decl in flat.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        m = re.fullmatch(r"(.*?)(\**)\s*(\w+)\s*(?:\[(\w+)\])?\s*(?::\s*(\d+))?", decl)
        if not m:
            raise ValueError("member " + decl)
        mtype = (m.group(1).strip() + " " + m.group(2)).strip()
        result.append((mtype, m.group(3), m.group(5), m.group(4)))
    return result


def prototypes(text):
    found = {}
    for m in re.finditer(r"\b(it_status_t|void|uint64_t|it_rdma_addr_t)\s+(it_\w+)\s*"
                         r"\(([^;{]*?)\)\s*;", text, flags=re.S):
        params = []
        for p in m.group(3).split(","):
            p = re.sub(r"\b(IN|OUT)\b", "", p)
            p = " ".join(re.sub(r"\s*\*\s*", " * ", p).split())
            p = re.sub(r"\s*\w+$", "", p)  # drop the parameter name
            params.append(p.replace(" *", " *").replace("* *", "**"))
        found.setdefault(m.group(2), (m.group(1), params))
    return found


# Appendix G typos the pages correct (docs/spec-deviations.md).
APPENDIX_FIXES = [
    ("IT_ERR_RESOURCE_RECV DTO", "IT_ERR_RESOURCE_RECV_DTO"),
    ("IT_ERR_RESOURCE_REQ DTO", "IT_ERR_RESOURCE_REQ_DTO"),
    ("it_cn_est_identifrier_t", "it_cn_est_identifier_t"),
    ("it_ioibl_type_t ioibl_types_supported", "it_iobl_type_t iobl_types_supported"),
]


def main():
    lines = read(sys.argv[1])
    pages = code(lines, *PAGES)
    appendix = code(lines, *APPENDIX_G)
    for wrong, right in APPENDIX_FIXES:
        appendix = appendix.replace(wrong, right)

    page_types, appendix_types = aggregates(pages), aggregates(appendix)
    out = ["/* Generated by tests/it_api/gen_spec_table.py from the IT-API 2.1 text: do not edit. */"]

    # Enumerators: the page value wins; appendix-only enumerators (IT-API 1.0 names) kept.
    out.append("\n/* Enumerator values */")
    for name in sorted(set(page_types) | set(appendix_types)):
        decls = page_types.get(name) or appendix_types[name]
        if decls[0][0] != "enum":
            continue
        page_values = dict(enumerators(decls[0][1]))
        extra = {}
        if name in appendix_types and name != "it_status_t":
            for n, v in enumerators(appendix_types[name][0][1]):
                if n not in page_values:
                    extra[n] = v
        out.append("/* %s */" % name)
        for n, v in list(page_values.items()) + list(extra.items()):
            out.append("IT_SA(%s == %s);" % (n, v))
        if name == "it_status_t":
            out.append("IT_SA(sizeof(it_status_t) == sizeof(int));")

    # Stream of every event number.
    events = dict(enumerators(page_types["it_event_type_t"][0][1])) if "it_event_type_t" in page_types \
        else dict(enumerators(appendix_types["it_event_type_t"][0][1]))
    out.append("\n/* Event streams: event_number & IT_EVENT_STREAM_MASK */")
    streams = {v: n for n, v in events.items() if n.endswith("_STREAM")}
    for n, v in events.items():
        out.append("IT_SA((%s & IT_EVENT_STREAM_MASK) == %s);" % (n, streams[v & 0xFF000]))

    # Members: declared type, order, character array sizes.
    out.append("\n/* Structure members: type, order, array sizes */")
    for name in sorted(set(page_types) | set(appendix_types)):
        complete = [d for d in page_types.get(name, []) if "..." not in d[1]]
        kind, body = (complete or appendix_types[name])[0]
        if kind == "enum":
            continue
        previous, after_bitfield = None, False
        for mtype, member, bits, array in members(body):
            if name == "it_rmr_param_t" and member in ("bound", "linked"):
                member = "IT_RMR_PARAM_LINKED_MEMBER"
            if bits:  # no offsetof or sizeof for a bit-field
                out.append("IT_BITFIELD(%s, %s, %s, %s)" % (name, member, mtype, bits))
                after_bitfield = previous is None
                continue
            if array:
                out.append("IT_SA(sizeof(((%s *)0)->%s) == %s);" % (name, member, array))
            elif "@NESTED@" not in mtype:
                out.append("IT_MEMBER_TYPE(%s, %s, %s)" % (name, member, mtype))
            if kind == "union":
                out.append("IT_SA(offsetof(%s, %s) == 0);" % (name, member))
            elif previous:
                out.append("IT_SA(offsetof(%s, %s) < offsetof(%s, %s));"
                           % (name, previous, name, member))
            else:  # the first member, or the first after leading bit-fields
                out.append("IT_SA(offsetof(%s, %s) %s 0);"
                           % (name, member, ">" if after_bitfield else "=="))
            previous = member

    # Prototypes: the appendix has all 83 (pages lack the versioned names and the two
    # missing pages); parameter types agree with the pages (checked by hand).
    protos = prototypes(appendix)
    out.append("\n/* Prototypes (%d) */" % len(protos))
    for name in sorted(protos):
        ret, params = protos[name]
        out.append("IT_PROTO(%s, %s, (%s))" % (name, ret, ", ".join(params)))
    print("\n".join(out))


if __name__ == "__main__":
    main()
