package proc

// Ref is a running process that names a path: its command line, its
// executable or its working directory (Via) is or lies inside Path.
type Ref struct {
	PID  int
	Path string
	Via  string
}
