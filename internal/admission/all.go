package admission

import "aicli.dev/aicli/internal/apiserver"

// All returns the admitters the supervisor runs, by resource plural, reading
// other objects from st.
func All(st Lister) map[string]apiserver.Admitter {
	return map[string]apiserver.Admitter{"conversations": &Conversations{Store: st}, "grants": &Grants{Store: st},
		"agents": &Agents{Store: st}, "monitorattachments": &MonitorAttachments{Store: st}, "toolclasses": ToolClasses{}}
}
