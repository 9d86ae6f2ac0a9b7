package main

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCommandsRunOffTheLockedThread: a command runs on a goroutine the scheduler may
// move, not on the thread the caller is locked to, as Fyne's init locks the main
// goroutine (a goroutine locked to a thread runs nowhere else, and its thread runs
// nothing else, so a command still on the caller's goroutine would see its thread).
func TestCommandsRunOffTheLockedThread(t *testing.T) {
	done := make(chan struct{})
	go func() { // a goroutine of the test's own, so its lock ends with it
		defer close(done)
		runtime.LockOSThread()
		locked := unix.Gettid()
		for range 20 {
			var tid int
			if code := offLockedThread(func() int { tid = unix.Gettid(); runtime.Gosched(); return 3 }); code != 3 {
				t.Errorf("offLockedThread returned %d, want the command's 3", code)
			}
			if tid == locked {
				t.Errorf("the command ran on the caller's locked thread %d", tid)
				return
			}
		}
	}()
	<-done
}
