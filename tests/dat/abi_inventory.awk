# abi_inventory.awk - list the ABI items of a set of DAT headers, read from DWARF.
#
# Input: `readelf --debug-dump=info` of an object compiled with
# -g -fno-eliminate-unused-debug-types from a file that includes the headers.
# Output, one item per line (abi_check.sh turns them into probe code):
#   T <typedef> <int|ptr|fnptr|agg|array|other>
#   A <aggregate expression>            e.g. "struct dat_event", "DAT_EVENT"
#   M <aggregate expression>|<member>   e.g. "struct dat_cno_param|proxy.agent"
#   E <enumerator>
# Only DAT items are listed (typedefs and enumerators named DAT_* or DCNT_*,
# aggregates tagged dat_* or named by such a typedef); system types are not.
# The compiler does the parsing, so nothing the headers declare is missed.

function strip_name(line,    i) {
    i = match(line, /: [^:]*$/)
    return substr(line, i + 2)
}

function ref_of(line,    s) {
    s = line
    sub(/.*<0x/, "", s)
    sub(/>.*/, "", s)
    return s
}

# Follow typedefs and qualifiers to the DIE that says what a type is.
function underlying(off,    guard) {
    guard = 0
    while (off != "" && (tag[off] == "typedef" || tag[off] == "const_type" || tag[off] == "volatile_type") && guard++ < 64)
        off = type[off]
    return off
}

function kind_of(off,    u, p) {
    u = underlying(off)
    if (u == "") return "other"
    if (tag[u] == "base_type") return (name[u] ~ /float|double/) ? "other" : "int"
    if (tag[u] == "enumeration_type") return "int"
    if (tag[u] == "pointer_type") {
        p = underlying(type[u])
        return (p != "" && tag[p] == "subroutine_type") ? "fnptr" : "ptr"
    }
    if (tag[u] == "structure_type" || tag[u] == "union_type") return "agg"
    if (tag[u] == "array_type") return "array"
    return "other"
}

function is_aggregate(off) {
    return tag[off] == "structure_type" || tag[off] == "union_type"
}

# Members of aggregate `off`, reached from `expr` with member prefix `prefix`.
# Anonymous aggregates (unnamed members, or members of an untagged struct or
# union type) are walked into, since nothing else names them.
function walk_members(off, expr, prefix,    i, c, t, path) {
    for (i = 1; i <= nchild[off]; i++) {
        c = child[off, i]
        if (tag[c] != "member") continue
        t = type[c]
        if (name[c] == "") {
            if (is_aggregate(t)) walk_members(t, expr, prefix)
            continue
        }
        path = prefix name[c]
        print "M " expr "|" path
        if (is_aggregate(t) && name[t] == "") walk_members(t, expr, path ".")
    }
}

/^ *<[0-9]+><[0-9a-f]+>: Abbrev Number: [0-9]+ \(DW_TAG_/ {
    line = $0
    level = line; sub(/^ *</, "", level); sub(/>.*/, "", level); level += 0
    off = line; sub(/^ *<[0-9]+></, "", off); sub(/>.*/, "", off)
    t = line; sub(/.*\(DW_TAG_/, "", t); sub(/\).*/, "", t)
    cur = off
    tag[cur] = t
    name[cur] = ""
    type[cur] = ""
    order[++ndie] = cur
    stack[level] = cur
    if (level > 0) {
        parent = stack[level - 1]
        child[parent, ++nchild[parent]] = cur
    }
    next
}

/^ *<[0-9a-f]+> +DW_AT_name +:/ { if (cur != "") name[cur] = strip_name($0); next }
/^ *<[0-9a-f]+> +DW_AT_type +:/ { if (cur != "") type[cur] = ref_of($0); next }
/^ *<[0-9]+><[0-9a-f]+>: Abbrev Number: 0/ { next }

END {
    # Typedefs, and which aggregates they name.
    for (i = 1; i <= ndie; i++) {
        d = order[i]
        if (tag[d] != "typedef" || name[d] !~ /^(DAT_|DCNT_)/) continue
        print "T " name[d] " " kind_of(d)
        u = underlying(d)
        if (is_aggregate(u)) {
            ours[u] = 1
            if (!(u in first_expr)) first_expr[u] = name[d]
            print "A " name[d]
        }
    }
    for (i = 1; i <= ndie; i++) {
        d = order[i]
        if (is_aggregate(d) && name[d] ~ /^dat_/) {
            ours[d] = 1
            expr = (tag[d] == "structure_type" ? "struct " : "union ") name[d]
            first_expr[d] = expr
            print "A " expr
        }
        if (tag[d] == "enumerator" && name[d] ~ /^(DAT_|DCNT_)/) print "E " name[d]
    }
    for (d in ours) walk_members(d, first_expr[d], "")
}
