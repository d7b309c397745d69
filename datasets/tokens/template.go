package tokens

// chatTemplate is a compiled chat template.
type chatTemplate struct {
	src string
}

func newChatTemplate(src string, c *config) (*chatTemplate, error) {
	return &chatTemplate{src: src}, nil
}
