-- The Data Studio tests' additions to the demo (tests/tests/studio.rs): a boolean on articles,
-- and field metadata as a Directus project has it (interfaces the Studio's forms render).
ALTER TABLE articles ADD COLUMN featured boolean NOT NULL DEFAULT false;

INSERT INTO cdapi.fields (collection, field, meta) VALUES
    ('articles', 'status', '{"interface": "select-dropdown", "width": "half", "sort": 1, "options": {"choices": [{"text": "Draft", "value": "draft"}, {"text": "Published", "value": "published"}, {"text": "Archived", "value": "archived"}]}}'),
    ('articles', 'title', '{"interface": "input", "width": "half", "sort": 2}'),
    ('articles', 'slug', '{"interface": "input", "width": "half", "sort": 3}'),
    ('articles', 'rating', '{"interface": "input", "width": "half", "sort": 4}'),
    ('articles', 'body', '{"interface": "input-multiline", "sort": 5}'),
    ('articles', 'published_at', '{"interface": "datetime", "width": "half", "sort": 6}'),
    ('articles', 'featured', '{"interface": "boolean", "special": ["cast-boolean"], "width": "half", "sort": 7}'),
    ('articles', 'author', '{"interface": "select-dropdown-m2o", "special": ["m2o"], "options": {"template": "{{name}}"}, "display": "related-values", "display_options": {"template": "{{name}}"}, "sort": 8}'),
    ('articles', 'tags', '{"interface": "list-m2m", "special": ["m2m"], "options": {"template": "{{tags_id.name}}"}, "sort": 9}'),
    ('articles', 'word_count', '{"interface": "input", "width": "half", "readonly": true, "sort": 10}'),
    ('articles', 'created_at', '{"interface": "datetime", "width": "half", "readonly": true, "special": ["date-created"], "sort": 11}')
ON CONFLICT (collection, field) DO UPDATE SET meta = EXCLUDED.meta;
