# flat2sh.awk -v d=ID: yaml2flat.awk output -> shell assignments for nocloud:
#   D<ID>_<path>='<escaped value>'  and  N<ID>_<list path>=<item count>
# (<path>: every character outside [A-Za-z0-9_] becomes "_")
BEGIN { FS = "\t" }
{
  path = $1; v = substr($0, length($1) + 2)
  k = path; gsub(/[^A-Za-z0-9_]/, "_", k)
  gsub(/'/, "'\"'\"'", v)
  print "D" d "_" k "='" v "'"
  n = split(path, parts, "."); p = ""
  for (i = 1; i <= n; i++) {
    if (parts[i] ~ /^[0-9]+$/) {
      pk = p; gsub(/[^A-Za-z0-9_]/, "_", pk)
      if (parts[i] + 1 > cnt[pk]) cnt[pk] = parts[i] + 1
    }
    p = (i == 1) ? parts[i] : p "." parts[i]
  }
}
END { for (k in cnt) print "N" d "_" k "=" cnt[k] }
