package transcriptwire

import "fmt"

// AdvicePrefix is what the supervisor homing a target conversation puts
// before a monitor's advice: `[Advice from monitor "m"]: `. It is applied by
// the platform (the local advise path and the attributed send of the public
// API alike), so a monitor cannot pass as the user.
func AdvicePrefix(monitor string) string { return fmt.Sprintf("[Advice from monitor %q]: ", monitor) }

// Advice is the message that delivers monitor's advice text: AdvicePrefix
// and the text, Framed so that no line of the text can pose as another
// header.
func Advice(monitor, text string) string { return Framed(AdvicePrefix(monitor), text) }
