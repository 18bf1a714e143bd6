package branch

import "time"

// Action is what the Core asks its executor to do, as plain data.
type Action interface{ isAction() }

// Commit asks for Windows to be committed, oldest first, as one chain when
// there are several (the core asks for several only when the forge chains,
// Core.ChainLimit). Its result comes back as a CommittedEvent, a
// ConflictEvent, a ChainRefusedEvent or a FailedEvent; until the core has
// done with it (a conflict is replayed, a refused chain's first window
// goes alone) it asks for no other commit.
type Commit struct{ Windows []*window }

// Notify tells the outside how something ended.
type Notify struct{ Outcome Outcome }

// Schedule asks for a TickEvent at At; a later Schedule replaces it.
type Schedule struct{ At time.Time }

func (Commit) isAction()   {}
func (Notify) isAction()   {}
func (Schedule) isAction() {}
