# yaml2flat.awk - flatten the YAML subset that cloud-config uses into lines
#     PATH <TAB> VALUE
# PATH joins mapping keys and list indices (from 0) with ".", e.g.
# "users.0.ssh_authorized_keys.1" or "mounts.0.3". VALUE is the scalar with
# "\" -> "\\", newline -> "\n", tab -> "\t", CR -> "\r", so one record is one
# line and `printf '%b'` restores the exact bytes. A key with no value
# (null) gives an empty VALUE; an empty list or map gives no record at all.
# Scalars stay text: true/false/0755 are not interpreted.
#
# Supported: block mappings and sequences at any indentation (including
# "key:\n- item" with the dash at the key's column and "- key: v" maps inside
# lists), plain / 'single' / "double" scalars (double-quoted escapes, also
# over several lines as emitters fold them), block scalars | |- |+ > >- with
# optional indentation digit, flow collections [..] and {..} (nested, over
# several lines), comments, tags (!!str ... dropped) and anchors (dropped).
# Not supported: aliases, complex keys, multiple documents in one stream.
# Written for busybox awk (also runs under mawk and gawk).

function esc(s,    r, c) {
  r = ""
  while (match(s, /[\\\t\r\n]/)) {
    c = substr(s, RSTART, 1)
    r = r substr(s, 1, RSTART - 1) (c == "\\" ? "\\\\" : c == "\n" ? "\\n" : c == "\t" ? "\\t" : "\\r")
    s = substr(s, RSTART + 1)
  }
  return r s
}
function emit(p, v) { print p "\t" esc(v) }
function join(p, k) { return p == "" ? k : p "." k }
function ltrim(s) { sub(/^[ \t]+/, "", s); return s }
function rtrim(s) { sub(/[ \t]+$/, "", s); return s }
function trim(s) { return rtrim(ltrim(s)) }
function indent(s) { match(s, /^ */); return RLENGTH }

# ---- quoted scalars
function hexval(h,    i, v) {
  v = 0; h = tolower(h)
  for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
  return v
}
function utf8(c) {   # code point -> UTF-8 bytes
  if (c < 128) return sprintf("%c", c)
  if (c < 2048) return sprintf("%c%c", 192 + int(c / 64), 128 + c % 64)
  if (c < 65536) return sprintf("%c%c%c", 224 + int(c / 4096), 128 + int(c / 64) % 64, 128 + c % 64)
  return sprintf("%c%c%c%c", 240 + int(c / 262144), 128 + int(c / 4096) % 64, 128 + int(c / 64) % 64, 128 + c % 64)
}
# body of a double-quoted scalar (without the quotes) -> bytes
function undq(s,    r, c, n) {
  r = ""
  while ((n = index(s, "\\")) > 0) {
    r = r substr(s, 1, n - 1); c = substr(s, n + 1, 1); s = substr(s, n + 2)
    if (c == "n") r = r "\n"
    else if (c == "t" || c == "\t") r = r "\t"
    else if (c == "r") r = r "\r"
    else if (c == "0") r = r sprintf("%c", 0)
    else if (c == "a") r = r sprintf("%c", 7)
    else if (c == "b") r = r sprintf("%c", 8)
    else if (c == "e") r = r sprintf("%c", 27)
    else if (c == "f") r = r sprintf("%c", 12)
    else if (c == "v") r = r sprintf("%c", 11)
    else if (c == "x") { r = r sprintf("%c", hexval(substr(s, 1, 2))); s = substr(s, 3) }
    else if (c == "u") { r = r utf8(hexval(substr(s, 1, 4))); s = substr(s, 5) }
    else if (c == "U") { r = r utf8(hexval(substr(s, 1, 8))); s = substr(s, 9) }
    else if (c == "N") r = r utf8(133)
    else if (c == "_") r = r utf8(160)
    else if (c == "L") r = r utf8(8232)
    else if (c == "P") r = r utf8(8233)
    else r = r c                    # \" \\ \/ \<space> and anything unknown
  }
  return r s
}
function unsq(s) { gsub(/''/, "'", s); return s }
# position of the quote that closes a scalar opened at s[1], or 0
function qend(s, q,    i, n, c) {
  n = length(s)
  for (i = 2; i <= n; i++) {
    c = substr(s, i, 1)
    if (q == "\"" && c == "\\") { i++; continue }
    if (c == q) {
      if (q == "'" && substr(s, i + 1, 1) == "'") { i++; continue }
      return i
    }
  }
  return 0
}
# YAML line folding inside a quoted scalar that spans lines: a line break
# becomes a space, n empty lines become n newlines, "\" at the end of a line
# (double quotes only) joins the lines; indentation is dropped
function fold(s, q,    parts, n, i, r, t, emp) {
  n = split(s, parts, "\n"); r = parts[1]; emp = 0
  for (i = 2; i <= n; i++) {
    t = ltrim(parts[i])
    if (i < n && t == "") { emp++; continue }
    if (q == "\"" && match(r, /\\+$/) && RLENGTH % 2 == 1) r = substr(r, 1, length(r) - 1) t
    else {
      r = rtrim(r)
      if (emp) { for (; emp > 0; emp--) r = r "\n" } else r = r " "
      r = r t
    }
    emp = 0
  }
  return r
}
function unquote(s,    q, e, b) {
  q = substr(s, 1, 1)
  if (q != "\"" && q != "'") return s
  e = qend(s, q); if (!e) e = length(s) + 1
  b = substr(s, 2, e - 2); if (index(b, "\n")) b = fold(b, q)
  return q == "\"" ? undq(b) : unsq(b)
}

# ---- comments: cut " #..." outside quotes (a quote only opens a scalar at
# its start: line start, after blank, "[", "{", ",")
function stripc(s,    i, n, c, q, prev) {
  n = length(s); q = ""; prev = " "
  for (i = 1; i <= n; i++) {
    c = substr(s, i, 1)
    if (q == "\"") { if (c == "\\") i++; else if (c == "\"") q = "" }
    else if (q == "'") { if (c == "'") q = "" }
    else if (c == "#" && (prev == " " || prev == "\t")) return rtrim(substr(s, 1, i - 1))
    else if ((c == "\"" || c == "'") && index(" \t[{,", prev) > 0) q = c
    prev = c
  }
  return rtrim(s)
}

# ---- flow collections: [a, "b", {k: v}]; FLS is the text, FP the cursor
function fskip(    c) {
  while (FP <= length(FLS)) {
    c = substr(FLS, FP, 1)
    if (c == "#") { while (FP <= length(FLS) && substr(FLS, FP, 1) != "\n") FP++ }
    else if (index(" \t\n", c) > 0) FP++
    else break
  }
}
function fscalar(    c, e, st) {
  c = substr(FLS, FP, 1)
  if (c == "\"" || c == "'") {
    e = qend(substr(FLS, FP), c); if (!e) e = length(FLS) - FP + 2
    st = substr(FLS, FP, e); FP += e
    return unquote(st)
  }
  st = FP
  while (FP <= length(FLS)) {
    c = substr(FLS, FP, 1)
    if (c == "," || c == "]" || c == "}") break
    if (c == ":" && index(" \t\n,]}", substr(FLS, FP + 1, 1)) > 0) break
    FP++
  }
  c = trim(substr(FLS, st, FP - st)); gsub(/\n[ \t]*/, " ", c)
  return c
}
function fparse(path,    c, i, k) {
  fskip(); c = substr(FLS, FP, 1)
  if (c == "[" || c == "{") {
    FP++; i = 0
    while (FP <= length(FLS)) {
      fskip()
      if (substr(FLS, FP, 1) == (c == "[" ? "]" : "}")) { FP++; return }
      if (c == "[") fparse(join(path, i++))
      else {
        k = fscalar(); fskip()
        if (substr(FLS, FP, 1) == ":") { FP++; fparse(join(path, k)) } else emit(join(path, k), "")
      }
      fskip()
      if (substr(FLS, FP, 1) == ",") FP++
    }
    return
  }
  emit(path, fscalar())
}
function fbalanced(s,    i, n, c, q, d) {   # 1 when all [ { are closed
  n = length(s); d = 0; q = ""
  for (i = 1; i <= n; i++) {
    c = substr(s, i, 1)
    if (q == "\"") { if (c == "\\") i++; else if (c == "\"") q = "" }
    else if (q == "'") { if (c == "'") q = "" }
    else if (c == "\"" || c == "'") q = c
    else if (c == "#" && (i == 1 || index(" \t\n", substr(s, i - 1, 1)) > 0)) { while (i < n && substr(s, i + 1, 1) != "\n") i++ }
    else if (c == "[" || c == "{") d++
    else if (c == "]" || c == "}") d--
  }
  return d <= 0
}

# ---- block structure
function push(k, n, p) { sp++; kind[sp] = k; ind[sp] = n; pfx[sp] = p; cnt[sp] = 0 }
function flushheld() { if (held) { emit(hpath, hval); held = 0 } }
# "key: value" -> KEY, VAL; 0 when s is not a mapping entry
function iskey(s,    q, e, r) {
  q = substr(s, 1, 1)
  if (q == "\"" || q == "'") {
    e = qend(s, q); if (!e) return 0
    r = substr(s, e + 1)
    if (r !~ /^[ \t]*:([ \t]|$)/) return 0
    KEY = unquote(substr(s, 1, e)); sub(/^[ \t]*:/, "", r); VAL = trim(r)
    return 1
  }
  if (q == "[" || q == "{" || q == "-" && s ~ /^-( |$)/) return 0
  if (!match(s, /:([ \t]|$)/)) return 0
  KEY = rtrim(substr(s, 1, RSTART - 1)); VAL = trim(substr(s, RSTART + 1))
  return 1
}
# a value that follows "key:" or "- " on a line whose parent column is pi
function value(p, v, pi,    e, q, h) {
  while (v ~ /^[!&][^ ]*( |$)/) { sub(/^[!&][^ ]*/, "", v); v = ltrim(v) }
  if (v == "") { pend = 1; ppath = p; pind = pi; return }
  q = substr(v, 1, 1)
  if (q == "|" || q == ">") {                     # block scalar header
    h = v; blk = 1; bpath = p; bpi = pi; bfold = (q == ">"); bchomp = "clip"; bind = -1; lastsp = 0
    bbuf = ""; bn = 0; bempty = 0
    if (h ~ /-/) bchomp = "strip"; else if (h ~ /\+/) bchomp = "keep"
    if (match(h, /[1-9]/)) bind = pi + substr(h, RSTART, 1)
    return
  }
  if (q == "\"" || q == "'") {
    e = qend(v, q)
    if (e) { emit(p, unquote(v)); return }
    mq = q; mpath = p; mbuf = v; multi = 1          # continues on next lines
    return
  }
  if (q == "[" || q == "{") {
    if (fbalanced(v)) { FLS = v; FP = 1; fparse(p); return }
    facc = 1; fpath = p; FLS = v
    return
  }
  held = 1; hpath = p; hval = v; hind = pi
}
function endblock(    r, i) {
  r = bbuf
  if (bchomp == "clip" && bn > 0) r = r "\n"
  else if (bchomp == "keep") { r = r "\n"; for (i = 0; i < bempty; i++) r = r "\n" }
  emit(bpath, r); blk = 0
}
function process(n, t,    p, rest, col) {
  if (pend) {
    pend = 0
    if (n > pind || (n == pind && t ~ /^-( |$)/ && kind[sp] == "m")) push(t ~ /^-( |$)/ ? "s" : "m", n, ppath)
    else emit(ppath, "")
  }
  if (sp < 0) {
    if (t ~ /^[\[{]/) { facc = 1; fpath = ""; FLS = t; if (fbalanced(FLS)) { facc = 0; FP = 1; fparse("") }; return }
    push(t ~ /^-( |$)/ ? "s" : "m", n, "")
  }
  while (sp > 0 && n < ind[sp]) sp--
  if (sp > 0 && kind[sp] == "s" && n == ind[sp] && t !~ /^-( |$)/) sp--
  if (kind[sp] == "s") {
    if (t !~ /^-( |$)/) return                      # not valid here; ignored
    p = join(pfx[sp], cnt[sp]++)
    rest = substr(t, 2)
    if (!match(rest, /[^ ]/)) { pend = 1; ppath = p; pind = n; return }
    col = n + RSTART; rest = substr(rest, RSTART)
    if (rest ~ /^-( |$)/) { push("s", col, p); process(col, rest); return }
    if (iskey(rest)) { push("m", col, p); process(col, rest); return }
    value(p, rest, n)
    return
  }
  if (!iskey(t)) return                             # not valid here; ignored
  value(join(pfx[sp], KEY), VAL, n)
}

BEGIN { sp = -1 }
{
  line = $0; sub(/\r$/, "", line)
  if (blk) {                                        # inside a | or > scalar
    if (line ~ /^[ \t]*$/) { if (bn > 0) bempty++; next }
    n = indent(line)
    if (bind < 0 && n > bpi) bind = n
    if (bind >= 0 && n >= bind) {
      t = substr(line, bind + 1)
      if (bn == 0) bbuf = t
      else if (!bfold) { for (i = 0; i <= bempty; i++) bbuf = bbuf "\n"; bbuf = bbuf t }
      else if (bempty > 0) { for (i = 0; i < bempty; i++) bbuf = bbuf "\n"; bbuf = bbuf t }
      else bbuf = bbuf ((t ~ /^[ \t]/ || lastsp) ? "\n" : " ") t
      lastsp = (t ~ /^[ \t]/); bn++; bempty = 0
      next
    }
    endblock()
  }
  if (multi) {                                      # inside a multi-line quoted scalar
    mbuf = mbuf "\n" line
    if ((e = qend(mbuf, mq))) { multi = 0; emit(mpath, unquote(substr(mbuf, 1, e))) }
    next
  }
  if (line ~ /^(---|\.\.\.)( |$)/ || line ~ /^%/) next
  if (facc) {                                       # inside a multi-line flow collection
    FLS = FLS "\n" line
    if (fbalanced(FLS)) { facc = 0; FP = 1; fparse(fpath) }
    next
  }
  t = stripc(line)
  if (t ~ /^[ \t]*$/) next
  n = indent(t); t = substr(t, n + 1)
  if (held) {
    if (n > hind) { hval = hval " " t; next }       # plain scalar over several lines
    flushheld()
  }
  process(n, t)
}
END {
  if (blk) endblock()
  if (multi) emit(mpath, unquote(mbuf))
  if (facc) { FP = 1; fparse(fpath) }
  flushheld()
  if (pend) emit(ppath, "")
}
