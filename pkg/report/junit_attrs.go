package report

// The attributes the JUnit builder reads, numbered for xmlscan.Config.Attr:
// values of all other attributes are checked and dropped unread, so what one
// element costs in memory is bounded by jaCount fields of Limits.MaxField
// each.
const (
	jaNone = iota - 1
	jaName
	jaClassname
	jaFile
	jaLine
	jaStatus
	jaMessage
	jaTests
	jaFailures
	jaErrors
	jaSkipped
	jaCount
)

// attrOf numbers an attribute name, or returns jaNone.
func attrOf(name []byte) int {
	switch string(name) {
	case "name":
		return jaName
	case "classname":
		return jaClassname
	case "file":
		return jaFile
	case "line":
		return jaLine
	case "status":
		return jaStatus
	case "message":
		return jaMessage
	case "tests":
		return jaTests
	case "failures":
		return jaFailures
	case "errors":
		return jaErrors
	case "skipped":
		return jaSkipped
	}
	return jaNone
}
