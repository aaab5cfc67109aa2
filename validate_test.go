package chargeonce_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestValidateDescription_CountsCharactersNotBytes(t *testing.T) {
	tests := []struct {
		name, description, err string
	}{
		{"empty", "", ""},
		{"500 four-byte characters", strings.Repeat("😀", chargeonce.MaxDescriptionLength), ""},
		{"501 characters", strings.Repeat("a", chargeonce.MaxDescriptionLength+1), "has 501 characters; at most 500 are allowed"},
		{"invalid UTF-8", "a\xffb", "is not valid UTF-8"},
		{"control character", "a\tb", "must not contain control characters, such as U+0009 at byte 1"},
		{"right-to-left override", "gift \u202Eexe.txt", "must not contain invisible format characters, such as U+202E at byte 5"},
		{"right-to-left isolate", "a\u2067b", "must not contain invisible format characters, such as U+2067 at byte 1"},
		{"zero-width space", "pay\u200Bpal", "must not contain invisible format characters, such as U+200B at byte 3"},
		{"byte order mark", "\uFEFFgift", "must not contain invisible format characters, such as U+FEFF at byte 0"},
		{"soft hyphen", "gift\u00ADcard", "must not contain invisible format characters, such as U+00AD at byte 4"},
		{"accents, scripts and emoji", "Ağustos siparişi — 東京 ☕ 😀", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := chargeonce.ValidateDescription(tt.description)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.err)
		})
	}
}

func TestValidateCardToken_AllowsOneTo255TokenCharacters(t *testing.T) {
	tests := []struct {
		name, token, err string
	}{
		{"one character", "t", ""},
		{"255 characters", strings.Repeat("t", 255), ""},
		{"test token", "tok_chargeDeclined-1", ""},
		{"empty", "", "is required"},
		{"256 characters", strings.Repeat("t", 256), "must be 1 to 255 letters, digits, underscores or dashes"},
		{"space", "tok visa", "must be 1 to 255 letters, digits, underscores or dashes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := chargeonce.ValidateCardToken(tt.token)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.err)
		})
	}
}
