// Package sysmem says how much memory this process may use: the machine's RAM and
// the part of it available now, lowered to a memory limit the process runs under
// where the system has one (a Linux control group: a container's --memory, a
// systemd unit's MemoryMax). It is the one place both the fit estimates (models/hw:
// "RAM: …", which models fit) and the engine (whether a mapped model's weights are
// read into memory as it loads) learn it.
//
// The standard library has no call for it and the well-kept Go modules that read
// memory (gopsutil) read the machine's figures only, which in a container with a
// 10 GB limit on a 24 GB machine told the engine 23 GB were available: it read a
// 15 GB model into memory, the kernel evicted each page as the next came in, and
// the load took 40 s and a token 1.4 s instead of a few seconds and 0.14 s.
package sysmem

// Memory is what Read learns.
type Memory struct {
	// Total is the memory the process may use: the machine's RAM, or the limit it
	// runs under where that is lower.
	Total int64
	// Available is the part of Total that can be used now without swapping: free
	// memory and caches the system can drop (the page cache of a model's own files
	// included), 0 where the system does not say.
	Available int64
	// Machine is the machine's RAM, Total's where no limit applies.
	Machine int64
	// Limit names the limit that lowered Total or Available ("" where none did): the
	// control group's folder, as in /proc/self/cgroup.
	Limit string
}

// Limited reports whether a limit lower than the machine's RAM applies.
func (m Memory) Limited() bool { return m.Limit != "" }

// Read reads the memory this process may use (Memory).
func Read() (Memory, error) { return read() }
