package branch

import "time"

// Action is what the Core asks its executor to do, as plain data.
type Action interface{ isAction() }

// Commit asks for Windows to be committed, oldest first, as one chain when
// there are several and the forge chains, else the first alone. Its result
// comes back as a CommittedEvent or a FailedEvent; until then the core
// asks for no other commit.
type Commit struct{ Windows []*window }

// Notify tells the outside how something ended.
type Notify struct{ Outcome Outcome }

// Schedule asks for a TickEvent at At; a later Schedule replaces it.
type Schedule struct{ At time.Time }

func (Commit) isAction()   {}
func (Notify) isAction()   {}
func (Schedule) isAction() {}
