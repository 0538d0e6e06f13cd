"""workflow/integrations."""
