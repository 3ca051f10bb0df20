package budget

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
)

// State is one agent's durable budget: the bucket, the totals, and what was charged per conversation.
type State struct {
	Bucket Bucket `json:"bucket"`
	// Spent is everything charged; ToppedUp everything added by top-ups.
	Spent    Micro `json:"spent"`
	ToppedUp Micro `json:"toppedUp"`
	// Conversations are keyed by conversation uid.
	Conversations map[string]*Conversation `json:"conversations,omitempty"`
}

// Conversation is what the bucket knows of one conversation.
type Conversation struct {
	// Charged is the measured spend already charged, per CLI session the conversation ran (a resume may start a
	// new session). The bucket is charged by increases only, so a restart charges nothing twice.
	Charged map[string]Micro `json:"charged,omitempty"`
	// Delivered counts the messages delivered under the budget (the estimate's denominator).
	Delivered int64 `json:"delivered"`
}

// Spent is the conversation's measured spend charged so far.
func (c *Conversation) Spent() Micro {
	var s Micro
	for _, v := range c.Charged {
		s = satAdd(s, v)
	}
	return s
}

// NextCost is the estimate of the conversation's next message (NextMessageCost).
func (c *Conversation) NextCost() Micro { return NextMessageCost(c.Spent(), c.Delivered) }

func (s *State) conversation(uid string) *Conversation {
	if s.Conversations == nil {
		s.Conversations = map[string]*Conversation{}
	}
	c := s.Conversations[uid]
	if c == nil {
		c = &Conversation{Charged: map[string]Micro{}}
		s.Conversations[uid] = c
	}
	if c.Charged == nil {
		c.Charged = map[string]Micro{}
	}
	return c
}

// apply brings the bucket up to now under the agent's current limits: accrual at the old rate up to now, then the
// new rate and capacity (a level above a lowered capacity is kept until spent).
func (s *State) apply(lim Limits, now time.Time) {
	s.Bucket.Accrue(now)
	s.Bucket.Rate, s.Bucket.Capacity = lim.Rate, lim.Capacity
}

func (s *State) charge(amount Micro) {
	if amount > 0 {
		s.Bucket.Charge(amount)
		s.Spent = satAdd(s.Spent, amount)
	}
}

// Status is the state as the Agent's status.budget shows it.
func (s *State) Status() *v1alpha1.BudgetStatus {
	asOf := metav1.NewTime(s.Bucket.AsOf)
	return &v1alpha1.BudgetStatus{AvailableUSD: s.Bucket.Level.String(), AsOf: &asOf,
		SpentUSD: s.Spent.String(), ToppedUpUSD: s.ToppedUp.String()}
}
