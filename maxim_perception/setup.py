import os
from glob import glob

from setuptools import find_packages, setup

package_name = 'maxim_perception'


def tree(directory):
    """Data files of a folder, kept in their sub-folders under share/<package>/."""
    out = []
    for path in glob(os.path.join(directory, '**', '*'), recursive=True):
        if os.path.isfile(path):
            out.append((os.path.join('share', package_name, os.path.dirname(path)), [path]))
    return out


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    package_data={package_name: ['**/*.xml', '**/*.json', '**/*.yaml', '**/*.gbnf', '**/*.txt']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='Maxim developers',
    maintainer_email='dev@maxim-robot.org',
    description='Camera, attention, head control, servo drivers, the simulated head and hearing.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'camera_node = maxim_perception.nodes.camera_node:main',
            'attention_node = maxim_perception.nodes.attention_node:main',
            'head_controller_node = maxim_perception.nodes.head_controller_node:main',
            'sim_head_node = maxim_perception.nodes.sim_head_node:main',
            'hearing_node = maxim_perception.nodes.hearing_node:main',
        ],
    },
)
