# Doxygen input filter for cgr.h (docs/Doxyfile.in, FILTER_PATTERNS).
# cgr_status's enumerators come from the X-macro list CGR_STATUS_MAP, which
# doxygen's preprocessor expands without the descriptions. This writes them
# out instead, each with the list's text as its doc comment, on the line
# that expands the list, and blanks the helper macro's #define and #undef,
# so every other line keeps its number. Everything else passes unchanged.
#
# A list entry is one line: X(NAME, VALUE, "text") with an optional
# trailing backslash.
function trim(s) {
    sub(/^[ \t]+/, "", s)
    sub(/[ \t]+$/, "", s)
    return s
}
/^[ \t]*X\([A-Z0-9_]+, *[0-9]+, *".*"\)[ \t\\]*$/ {
    entry = $0
    sub(/^[ \t]*X\(/, "", entry)
    sub(/\)[ \t\\]*$/, "", entry)
    name = trim(substr(entry, 1, index(entry, ",") - 1))
    entry = substr(entry, index(entry, ",") + 1)
    value = trim(substr(entry, 1, index(entry, ",") - 1))
    text = trim(substr(entry, index(entry, ",") + 1))
    sub(/^"/, "", text)
    sub(/"$/, "", text)
    enums = enums sprintf("CGR_STATUS_%s = %s, /**< %s */ ", name, value, text)
    print
    next
}
/^[ \t]*#(define|undef)[ \t]+CGR__STATUS_ENUM/ {
    print ""
    next
}
/^[ \t]*CGR_STATUS_MAP\(CGR__STATUS_ENUM\)/ {
    if (enums == "") {
        print "doxygen_status.awk: CGR_STATUS_MAP is expanded before its list" > "/dev/stderr"
        exit 1
    }
    print "    " enums
    next
}
{ print }
END {
    if (enums == "") {
        print "doxygen_status.awk: no CGR_STATUS_MAP entries found" > "/dev/stderr"
        exit 1
    }
}
