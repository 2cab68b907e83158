package engine

// SetFinishing sets how many downloads may be finishing beside those in
// flight (see maxFinishing), before Run.
func (e *Engine) SetFinishing(n int) { e.finishing = n }

// AddFirstPart is how many URLs Add stores in its first part.
const AddFirstPart = addFirstPart
