package driver

import "time"

// KeepAlive calls ping every interval until done is closed (it then
// returns nil) or ping fails (it returns ping's error at once). A
// Listener runs it on a goroutine of its own, with its Confirmations'
// Done, to check an idle subscriber connection; what a failed ping means
// is the caller's to decide.
func KeepAlive(every time.Duration, done <-chan struct{}, ping func() error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-t.C:
			if err := ping(); err != nil {
				return err
			}
		}
	}
}
