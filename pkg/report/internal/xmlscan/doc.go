// Package xmlscan is the JUnit XML scanner of pkg/report. It reads a
// deliberately strict XML subset (spec § 4: "JUnit accepts a deliberately
// strict XML subset and rejects DTD/entity declarations"). It is hand-written because encoding/xml's token loop reads
// about 40 MB/s and allocates per token, while a 100 MB report must be read
// at close to xmllint --stream speed in memory that grows with the number of
// test ids, never with the file size.
//
// The subset, and where it is stricter than XML 1.0 or encoding/xml:
//
//   - The input is UTF-8 (an optional byte-order mark at offset 0 is skipped).
//     Every byte of the document, markup included, must be an XML Char.
//   - An XML declaration, if any, comes first and reads exactly
//     version "1.0", then optionally encoding UTF-8 or US-ASCII (any case),
//     then optionally standalone yes|no. Any other encoding is refused: the
//     bytes would not mean what a UTF-8 reader sees.
//   - No DOCTYPE, no ENTITY or other markup declaration, anywhere: nothing is
//     ever expanded or fetched. References are limited to the five predefined
//     entities and numeric character references that name an XML Char.
//   - Element and attribute names are ASCII ([A-Za-z_:][A-Za-z0-9._:-]*, at
//     most one colon, as encoding/xml requires), at most MaxName bytes;
//     at most MaxAttrs attributes per element, each name once.
//   - Exactly one root element; outside it only whitespace, comments and
//     processing instructions.
//   - Line ends "\r\n" and "\r" read as "\n" (XML § 2.11). Attribute values are
//     otherwise taken literally: a newline written inside name="…" stays a
//     newline. XML § 3.3.3 would turn it into a space; encoding/xml keeps it,
//     and so do we, so both readers (and the fuzz oracle that compares them)
//     agree on every test id.
//
// Everything outside the subset is RM-REPORT-001 with the line it was found
// on. Hard caps are RM-REPORT-003.
package xmlscan
