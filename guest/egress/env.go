package egress

// EnvEgress switches the guest's egress listeners: "off" disables them; anything else (or unset) enables them in
// supervised mode.
const EnvEgress = "AICLI_EGRESS"
