package budget

// NextMessageCost estimates what the conversation's next message will cost: the mean measured spend per message
// delivered so far in this conversation (spent ÷ delivered, rounded up), and 0 for a conversation with no
// delivered message or no measured spend yet (there is nothing real to go on, so the first message of a
// conversation is never held while the bucket is not in debt: Covers(0) is false only for a negative level).
//
// The mean, not the previous turn: turns of an agentic CLI vary by orders of magnitude (a one-line answer versus
// a long tool loop), and the mean over the conversation is what the bucket's accrual has to sustain.
func NextMessageCost(spent Micro, delivered int64) Micro {
	if spent <= 0 || delivered <= 0 {
		return 0
	}
	return (spent + Micro(delivered) - 1) / Micro(delivered)
}
